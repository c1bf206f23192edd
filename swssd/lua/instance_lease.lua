-- swssd's own script: compare-and-set of a daemon instance's lease key.
-- KEYS: the lease key
-- ARGV: the holder expected now ('' = none), the new holder ('' = release), time to live in ms
-- Reply: {1, new holder} when it matched and was set, else {0, the holder now ('' = none)}.
local current = redis.call('GET', KEYS[1])
if not current then
   current = ''
end
if current ~= ARGV[1] then
   return {0, current}
end
if ARGV[2] == '' then
   redis.call('DEL', KEYS[1])
else
   redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {1, ARGV[2]}
