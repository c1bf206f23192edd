-- swssd's own variant of producer_state_table_set.lua (opt-in: fast_scripts=True): the same key
-- set member, state hash and PUBLISH, with every field written by one HSET instead of one HSET
-- each (the same hash; keyspace events: one hset instead of one per field).
-- KEYS: channel, key set, state hash    ARGV: message, key, field, value, ...
local added = redis.call('SADD', KEYS[2], ARGV[2])
for i = 3, #ARGV, 1000 do -- in chunks: unpack() has a stack limit
    redis.call('HSET', KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if added > 0 then
    redis.call('PUBLISH', KEYS[1], ARGV[1])
end
