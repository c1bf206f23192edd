-- swssd's own variant of producer_state_table_batched_set.lua (opt-in: fast_scripts=True), with
-- the C++ script's KEYS and ARGV: the same key set, state hashes and PUBLISH, in one SADD of
-- every key and one HSET per entry instead of one SADD per key and one HSET per field.
-- KEYS: channel, key set, state table prefix, key, ...
-- ARGV: message, then per key: field count, field, value, ...
local added = 0
for i = 4, #KEYS, 1000 do -- in chunks: unpack() has a stack limit
    added = added + redis.call('SADD', KEYS[2], unpack(KEYS, i, math.min(i + 999, #KEYS)))
end
local idx = 2
for i = 4, #KEYS do
    local last = idx + tonumber(ARGV[idx]) * 2
    for j = idx + 1, last, 1000 do
        redis.call('HSET', KEYS[3] .. KEYS[i], unpack(ARGV, j, math.min(j + 999, last)))
    end
    idx = last + 1
end
if added > 0 then
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
