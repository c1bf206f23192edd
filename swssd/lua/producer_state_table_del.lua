local added = redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[2])
redis.call('DEL', KEYS[3])
if added > 0 then 
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
