-- Argo CD health check for ESPOJob (training.espo.dev/v1alpha1).
--
-- Install it in the argocd-cm ConfigMap (docs/user-guide.md, "GitOps"):
--
--   data:
--     resource.customizations.health.training.espo.dev_ESPOJob: |
--       <this file>
--
-- It maps the job's phase and conditions to Argo CD's health, consistent with what kstatus
-- and Flux read (the table in docs/user-guide.md, "GitOps"; a test holds all three to it):
--   Succeeded                      -> Healthy
--   Failed                         -> Degraded   (the Failed condition's reason and message)
--   Suspended                      -> Suspended
--   Pending, Running, Restarting   -> Progressing (why it waits, or how far training is)
-- The controller only ever writes status, so the job never shows as OutOfSync.

local hs = { status = "Progressing", message = "Waiting for the controller to report the job's status" }

local status = obj.status
if status == nil then
  return hs
end

-- condition returns the condition of a type, or nil.
local function condition(ctype)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == ctype then
      return c
    end
  end
  return nil
end

-- isTrue reports whether a condition of a type is True.
local function isTrue(ctype)
  local c = condition(ctype)
  return c ~= nil and c.status == "True"
end

-- explain is "Reason: message" of a condition, or fallback without one.
local function explain(c, fallback)
  if c == nil then
    return fallback
  end
  local reason, message = c.reason or "", c.message or ""
  if reason == "" then
    return message ~= "" and message or fallback
  end
  if message == "" then
    return reason
  end
  return reason .. ": " .. message
end

-- int formats a number without a fraction.
local function int(n)
  return string.format("%d", n)
end

-- progress describes how far training is, from status.training.
local function progress()
  local t = status.training
  if t == nil then
    return ""
  end
  local parts = {}
  if t.stage ~= nil then
    local s = "stage " .. t.stage
    if t.epoch ~= nil then
      s = s .. ", epoch " .. int(t.epoch)
    end
    table.insert(parts, s)
  end
  if t.step ~= nil then
    local s = "step " .. int(t.step)
    if t.totalSteps ~= nil and t.totalSteps > 0 then
      s = s .. "/" .. int(t.totalSteps)
    end
    table.insert(parts, s)
  end
  if t.evaluation ~= nil and t.evaluation.recommendationAccuracy ~= nil then
    table.insert(parts, "recommendation accuracy " .. t.evaluation.recommendationAccuracy)
  end
  return table.concat(parts, ", ")
end

-- withProgress appends the training progress to a message.
local function withProgress(message)
  local p = progress()
  if p == "" then
    return message
  end
  return message .. " (" .. p .. ")"
end

local phase = status.phase or ""

-- A finished job never leaves its phase.
if phase == "Failed" or isTrue("Failed") then
  hs.status = "Degraded"
  hs.message = explain(condition("Failed"), "The job failed")
  return hs
end
if phase == "Succeeded" or isTrue("Succeeded") then
  hs.status = "Healthy"
  hs.message = withProgress(explain(condition("Succeeded"), "The job succeeded"))
  return hs
end

-- A spec change the controller has not acted on yet.
local generation = obj.metadata ~= nil and obj.metadata.generation or nil
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "Waiting for the controller to observe generation " .. int(generation)
  return hs
end

if phase == "Suspended" or isTrue("Suspended") then
  hs.status = "Suspended"
  hs.message = explain(condition("Suspended"), "The job is suspended")
  return hs
end
if phase == "Restarting" or isTrue("Restarting") then
  hs.message = "Restarting: " .. explain(condition("Restarting"), "the trainer pods are being recreated")
  return hs
end
if phase == "Running" then
  hs.message = withProgress("Running")
  return hs
end

-- Pending: the children are being created, or the pods do not run yet; say why.
local created = condition("Created")
if created ~= nil and created.status == "False" then
  hs.message = "Pending: " .. explain(created, "creating the job's children")
  return hs
end
hs.message = "Pending: " .. explain(condition("Running"), "waiting for the trainer pods")
return hs
