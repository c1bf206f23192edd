-- swssd's own variant of consumer_state_table_pops.lua (opt-in: fast_scripts=True): the same
-- changes to Redis and the same entries, each with whether a delete was pending for it as the
-- tracked variant has it ({key, fieldvalues, 0 or 1}); each entry's fields are written by one
-- HSET instead of one HSET each, and the state hashes are deleted by one DEL per batch.
-- KEYS: key set, 'TABLE<sep>', delete set    ARGV: pop batch size, state prefix
redis.replicate_commands()
local ret = {}
local staged = {}
local tablename = KEYS[2]
local stateprefix = ARGV[2]
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
for i = 1, #keys do
   local key = keys[i]
   local num = redis.call('SREM', KEYS[3], key)
   if num == 1 then
      redis.call('DEL', tablename..key)
   end
   local staging = stateprefix..tablename..key
   local fieldvalues = redis.call('HGETALL', staging)
   ret[i] = {key, fieldvalues, num}
   for j = 1, #fieldvalues, 1000 do -- in chunks: unpack() has a stack limit
      redis.call('HSET', tablename..key, unpack(fieldvalues, j, math.min(j + 999, #fieldvalues)))
   end
   staged[i] = staging
end
for j = 1, #staged, 1000 do
   redis.call('DEL', unpack(staged, j, math.min(j + 999, #staged)))
end
return ret
