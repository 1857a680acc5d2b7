-- accelfs: turn --accel-mig into the job's GRES request (docs/slurm.md).
--
-- The SPANK plugin carves what --accel-mig asks for when the job starts; Slurm
-- must also count it, so that a job starts only where accelfs-slurm-sync's
-- counts say it can be carved.  SPANK cannot add to a job's request, and
-- job_submit can: this adds gres:mig:<profile>:<count> per item to
-- tres_per_node (summing items of one profile), keeping what else the job
-- asked for.  Install it as job_submit.lua beside slurm.conf with
-- JobSubmitPlugins=lua.

local OPTION = "_SLURM_SPANK_OPTION_accelfs_accel_mig="

local function accel_mig(job_desc)
  local env = job_desc.spank_job_env
  if env == nil then return nil end
  for _, kv in pairs(env) do
    if type(kv) == "string" and kv:sub(1, #OPTION) == OPTION then
      return kv:sub(#OPTION + 1)
    end
  end
  return nil
end

-- "ppu0/4g.48gb:2,1g.18gb" -> { ["4g.48gb"] = 2, ["1g.18gb"] = 1 }, or nil and why.
local function counts(value)
  local out, order = {}, {}
  for item in value:gmatch("[^,]+") do
    local spec, count = item:match("^([^:]+):(%d+)$")
    if spec == nil then spec, count = item, "1" end
    local profile = spec:match("/(.+)$") or spec
    if not profile:match("^[%w][%w_.-]*$") then
      return nil, "bad profile '" .. profile .. "' in --accel-mig=" .. value
    end
    if out[profile] == nil then table.insert(order, profile); out[profile] = 0 end
    out[profile] = out[profile] + tonumber(count)
  end
  return out, order
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local value = accel_mig(job_desc)
  if value == nil then return slurm.SUCCESS end
  local per, order = counts(value)
  if per == nil then
    slurm.log_user("accelfs: %s", order)
    return slurm.ERROR
  end
  local items = {}
  if job_desc.tres_per_node ~= nil and job_desc.tres_per_node ~= "" then
    for item in job_desc.tres_per_node:gmatch("[^,]+") do
      if item:match("^gres:mig[:$]") or item == "gres:mig" then
        slurm.log_user("accelfs: --accel-mig and --gres=mig together: give the partitions once, with --accel-mig")
        return slurm.ERROR
      end
      table.insert(items, item)
    end
  end
  for _, profile in ipairs(order) do
    table.insert(items, "gres:mig:" .. profile .. ":" .. per[profile])
  end
  job_desc.tres_per_node = table.concat(items, ",")
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
