redis.call('DEL', KEYS[1])
local keys = redis.call('KEYS', KEYS[2] .. '*')
for i,k in pairs(keys) do
    redis.call('DEL', k)
end
redis.call('DEL', KEYS[3])
