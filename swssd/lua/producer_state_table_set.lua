local added = redis.call('SADD', KEYS[2], ARGV[2])
for i = 0, #KEYS - 3 do
    redis.call('HSET', KEYS[3 + i], ARGV[3 + i * 2], ARGV[4 + i * 2])
end
 if added > 0 then 
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
