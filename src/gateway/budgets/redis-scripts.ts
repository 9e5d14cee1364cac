/**
 * The Redis ledger's Lua scripts. Each runs atomically on the server, so
 * checking every counter of a call (key and tenant, every window) and
 * reserving in all of them is one step however many replicas ask at once.
 *
 * A counter is a hash with `used` (settled consumption), `held` (the sum of
 * live reservations), `seeded` (set once its window's starting figure was
 * loaded from the usage records) and one field `r:<id>` per reservation
 * holding its amount; beside it a sorted set of the reservation ids by
 * expiry. A reservation whose replica died before settling is dropped by
 * the next script that touches the counter once its expiry has passed, so
 * a crash holds a budget for at most the reservation TTL. Both keys expire
 * after their window (plus the TTL, for late settles).
 *
 * Figures are passed and returned as strings (a Lua number returned to
 * Redis is truncated to an integer).
 */

/** Drops the expired reservations of one counter (shared by reserve and read). */
const PURGE = `
local function purge(h, z, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  if #gone == 0 then return end
  for _, rid in ipairs(gone) do
    local amount = redis.call('HGET', h, 'r:' .. rid)
    if amount then
      redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amount))
      redis.call('HDEL', h, 'r:' .. rid)
    end
  end
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now)
  if redis.call('ZCARD', z) == 0 then redis.call('HSET', h, 'held', '0') end
end
`;

/**
 * KEYS: per counter, its hash and its expiry set. ARGV: now, reservation
 * id, reservation expiry, epsilon; then per counter: limit, amount,
 * needs-seed ('1' for tokens and USD), key expiry.
 * Returns {'ok', used1, held1, used2, held2, ...} (after reserving),
 * {'refused', i, used, held} (nothing reserved), or {'seed', i}: counter i
 * has no starting figure for its window yet (nothing reserved).
 */
export const RESERVE = `${PURGE}
local now, id, expires, eps = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local n = #KEYS / 2
for i = 1, n do
  local h, z = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 4 + (i - 1) * 4
  if ARGV[a + 3] == '1' and redis.call('HEXISTS', h, 'seeded') == 0 then return {'seed', i} end
  purge(h, z, now)
  local used = redis.call('HGET', h, 'used') or '0'
  local held = redis.call('HGET', h, 'held') or '0'
  local taken = tonumber(used) + tonumber(held)
  local limit, amount = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  if not (taken < limit and taken + amount <= limit + eps) then return {'refused', i, used, held} end
end
local out = {'ok'}
for i = 1, n do
  local h, z = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 4 + (i - 1) * 4
  local amount = ARGV[a + 2]
  local held = redis.call('HINCRBYFLOAT', h, 'held', amount)
  redis.call('HSET', h, 'r:' .. id, amount)
  redis.call('ZADD', z, expires, id)
  redis.call('PEXPIREAT', h, ARGV[a + 4])
  redis.call('PEXPIREAT', z, ARGV[a + 4])
  out[#out + 1] = redis.call('HGET', h, 'used') or '0'
  out[#out + 1] = held
end
return out
`;

/**
 * KEYS: per counter, its hash and its expiry set. ARGV: reservation id;
 * then per counter: what the call really spent, key expiry. A reservation
 * already dropped as expired is not released twice; what was spent is
 * counted either way.
 */
export const SETTLE = `
local id = ARGV[1]
for i = 1, #KEYS / 2 do
  local h, z = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 2 + (i - 1) * 2
  local amount = redis.call('HGET', h, 'r:' .. id)
  if amount then
    redis.call('HDEL', h, 'r:' .. id)
    redis.call('ZREM', z, id)
    if redis.call('ZCARD', z) == 0 then redis.call('HSET', h, 'held', '0')
    else redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amount)) end
  end
  if tonumber(ARGV[a]) ~= 0 then redis.call('HINCRBYFLOAT', h, 'used', ARGV[a]) end
  redis.call('PEXPIREAT', h, ARGV[a + 1])
end
return 1
`;

/**
 * KEYS: one counter's hash. ARGV: the starting figure, key expiry. The first
 * replica to seed a window wins; the figure replaces `used` (the usage
 * records are the truth; no call can have settled into an unseeded window).
 */
export const SEED = `
if redis.call('HEXISTS', KEYS[1], 'seeded') == 0 then
  redis.call('HSET', KEYS[1], 'used', ARGV[1], 'seeded', '1')
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
return 1
`;

/**
 * KEYS: per counter, its hash and its expiry set. ARGV: now. Returns
 * {used1, held1, seeded1, ...} after dropping expired reservations.
 */
export const READ = `${PURGE}
local out = {}
for i = 1, #KEYS / 2 do
  local h, z = KEYS[2 * i - 1], KEYS[2 * i]
  purge(h, z, ARGV[1])
  out[#out + 1] = redis.call('HGET', h, 'used') or '0'
  out[#out + 1] = redis.call('HGET', h, 'held') or '0'
  out[#out + 1] = tostring(redis.call('HEXISTS', h, 'seeded'))
end
return out
`;
