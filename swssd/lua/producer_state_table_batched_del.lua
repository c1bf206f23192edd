local added = 0
for i = 0, #KEYS - 5 do
    added = added + redis.call('SADD', KEYS[2], KEYS[5 + i])
    redis.call('SADD', KEYS[3], KEYS[5 + i])
    redis.call('DEL', KEYS[4] .. KEYS[5 + i])
end
if added > 0 then 
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
