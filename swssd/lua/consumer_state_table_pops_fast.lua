-- swssd's own variant of consumer_state_table_pops.lua (opt-in: fast_scripts=True): the same
-- changes to Redis and the same entries, each with whether a delete was pending for it as the
-- tracked variant has it ({key, fieldvalues, 0 or 1}), with less work per key for Redis:
-- * a key whose table entry does not exist gets its state hash renamed into place (RENAMENX: the
--   same fields and values, in the same order, as HSET of what HGETALL read, and the state hash is
--   gone as DEL leaves it); an existing entry gets every field in one HSET instead of one HSET
--   each (the same hash); the other state hashes are deleted by one DEL per batch;
-- * the delete set is looked at per key only when it is not empty (SREM of an empty set changes
--   nothing).
-- Only keyspace notifications tell the difference: rename_from/rename_to, one hset instead of one
-- per field.
-- KEYS: key set, 'TABLE<sep>', delete set    ARGV: pop batch size, state prefix
redis.replicate_commands()
local ret = {}
local staged = {}
local tablename = KEYS[2]
local stateprefix = ARGV[2]
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
-- pcall, here and for RENAMENX: a command an ACL refuses falls back to what the C++ script does,
-- rather than failing the script after SPOP took the keys
local pending = redis.pcall('SCARD', KEYS[3])
local deletes = type(pending) ~= 'number' or pending > 0
for i = 1, #keys do
   local key = keys[i]
   local num = 0
   if deletes then
      num = redis.call('SREM', KEYS[3], key)
      if num == 1 then
         redis.call('DEL', tablename..key)
      end
   end
   local staging = stateprefix..tablename..key
   local fieldvalues = redis.call('HGETALL', staging)
   ret[i] = {key, fieldvalues, num}
   if #fieldvalues == 0 or redis.pcall('RENAMENX', staging, tablename..key) ~= 1 then
      for j = 1, #fieldvalues, 1000 do -- in chunks: unpack() has a stack limit
         redis.call('HSET', tablename..key, unpack(fieldvalues, j, math.min(j + 999, #fieldvalues)))
      end
      staged[#staged + 1] = staging
   end
end
for j = 1, #staged, 1000 do
   redis.call('DEL', unpack(staged, j, math.min(j + 999, #staged)))
end
return ret
