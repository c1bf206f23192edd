local added = 0
local idx = 2
for i = 0, #KEYS - 4 do
    added = added + redis.call('SADD', KEYS[2], KEYS[4 + i])
    for j = 0, tonumber(ARGV[idx]) - 1 do
        local attr = ARGV[idx + j * 2 + 1]
        local val = ARGV[idx + j * 2 + 2]
        redis.call('HSET', KEYS[3] .. KEYS[4 + i], attr, val)
    end
    idx = idx + tonumber(ARGV[idx]) * 2 + 1
end
if added > 0 then 
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
