-- range: a shooting gallery, the scripted example of docs/GAME_RULES.md.
--
-- Targets (kinematic spheres) slide back and forth across a range. Each player stands at a station of its
-- own and fires hit-scan shots: game messages of six little-endian floats, the ray's origin and direction.
-- The room checks every shot (it must leave from the shooter's station, at most one every few ticks) and
-- casts it against the targets where that player saw them (lag compensation, raycast_as_seen). A hit
-- scores a point. The room state is JSON: {"targets": [ids], "scores": {"<client id>": hits}, "shots": n,
-- "hits": n}; each client's state is JSON too: {"station": [x, y, z], "hits": n, "shots": n}.

local settings = {}
local targets = {}          -- array of {body=, speed=}
local players = {}          -- by client id: {station=, hits=, shots=, last_tick=}
local total_shots, total_hits = 0, 0

local function setting(name, default, low, high)
  local value = settings[name]
  if type(value) ~= "number" or value ~= value or value < low or value > high then
    return default
  end
  return value
end

local function publish(room)
  local ids, scores = {}, {}
  for i, target in ipairs(targets) do ids[i] = target.body end
  for id, player in pairs(players) do scores[tostring(id)] = player.hits end
  room:set_room_state(json.encode({targets = ids, scores = scores, shots = total_shots, hits = total_hits}))
end

local function tell(room, id)
  local p = players[id]
  room:set_client_state(id, json.encode({station = p.station, hits = p.hits, shots = p.shots}))
end

function on_start(room)
  settings = room:settings()
  local count = math.floor(setting("targets", 4, 1, 16))
  local reach = setting("reach", 8, 1, 50)
  for i = 1, count do
    -- Rows at increasing depth and height, alternating direction, each at its own speed.
    local speed = setting("speed", 4, 0.1, 30) * (1 + 0.25 * (i - 1)) * (i % 2 == 0 and -1 or 1)
    local body = room:create_body({
      type = "kinematic",
      shape = {kind = "sphere", radius = setting("radius", 0.5, 0.05, 5)},
      position = {x = ((i * 3.7) % (2 * reach)) - reach, y = 1 + 0.75 * i, z = -10 - 4 * i},
      velocity = {x = speed, y = 0, z = 0},
    })
    targets[#targets + 1] = {body = body, speed = math.abs(speed)}
  end
  publish(room)
end

function on_reload(room)
  -- Carry the game on: targets and scores come back from the room state.
  settings = room:settings()
  local state = json.decode(room:room_state())
  for i, id in ipairs(state.targets) do
    local vx = room:velocity(id)
    targets[i] = {body = id, speed = math.abs(vx)}
  end
  total_shots, total_hits = state.shots, state.hits
  for _, client in ipairs(room:clients()) do
    local mine = json.decode(room:client_state(client.id))
    players[client.id] = {station = mine.station, hits = mine.hits, shots = mine.shots, last_tick = 0}
  end
end

function on_tick_begin(room)
  local reach = setting("reach", 8, 1, 50)
  for _, target in ipairs(targets) do
    local x = room:position(target.body)
    local vx = room:velocity(target.body)
    if x > reach and vx > 0 then
      room:set_velocity(target.body, -target.speed, 0, 0)
    elseif x < -reach and vx < 0 then
      room:set_velocity(target.body, target.speed, 0, 0)
    end
  end
end

function on_join(room, client)
  local n = 0
  for _ in pairs(players) do n = n + 1 end
  players[client.id] = {station = {(n % 8) * 2 - 7, 1.5, 0}, hits = 0, shots = 0, last_tick = 0}
  tell(room, client.id)
  publish(room)
end

function on_leave(room, client, reason)
  players[client.id] = nil
  publish(room)
end

local function finite(v) return v == v and v > -1e6 and v < 1e6 end

function on_message(room, msg)
  local p = players[msg.client]
  -- Never trust a message: 24 bytes of six finite floats, from the shooter's station, not too often.
  if p == nil or #msg.data ~= 24 then return end
  local ox, oy, oz, dx, dy, dz = string.unpack("<ffffff", msg.data)
  for _, v in ipairs({ox, oy, oz, dx, dy, dz}) do
    if not finite(v) then return end
  end
  local s = p.station
  if (ox - s[1]) ^ 2 + (oy - s[2]) ^ 2 + (oz - s[3]) ^ 2 > 0.25 then return end
  if dx * dx + dy * dy + dz * dz < 1e-6 then return end
  if msg.tick < p.last_tick + setting("reload_ticks", 6, 0, 600) then return end
  p.last_tick = msg.tick
  p.shots = p.shots + 1
  total_shots = total_shots + 1
  local hit = room:raycast_as_seen(msg.view, ox, oy, oz, dx, dy, dz, 200)
  if hit then
    for _, target in ipairs(targets) do
      if hit.body == target.body then
        p.hits = p.hits + 1
        total_hits = total_hits + 1
        break
      end
    end
  end
  tell(room, msg.client)
  publish(room)
end
