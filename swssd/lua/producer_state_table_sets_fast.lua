-- swssd's own variant (opt-in: fast_scripts=True): what a run of producer_state_table_set.lua
-- calls leaves in Redis, in one call (a buffered producer's flush): per entry, in order, its key
-- set member, its state hash (every field in one HSET), and one PUBLISH when the key set did not
-- hold the key yet, as that entry's own set call would have sent.
-- KEYS: channel, key set, then per entry: its state hash
-- ARGV: message, then per entry: key, field count, field, value, ...
local idx = 2
for i = 3, #KEYS do
    local added = redis.call('SADD', KEYS[2], ARGV[idx])
    local last = idx + 1 + tonumber(ARGV[idx + 1]) * 2
    for j = idx + 2, last, 1000 do -- in chunks: unpack() has a stack limit
        redis.call('HSET', KEYS[i], unpack(ARGV, j, math.min(j + 999, last)))
    end
    if added > 0 then
        redis.call('PUBLISH', KEYS[1], ARGV[1])
    end
    idx = last + 1
end
