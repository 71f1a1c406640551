#include "workloads/trace/OpJson.hpp"

#include "base/InputError.hpp"

namespace memwall {
namespace {

const char* kclass_name(KernelClass k)
{
  switch (k) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::other: return "other";
  }
  return "?";
}

// The enum value whose name(value) is `s`, among values [0, count).
template <typename E>
E by_name(const nlohmann::json& j, const char* key, int count, const char* (*name)(E), const std::string& where)
{
  if (!j.contains(key) || !j[key].is_string())
    throw InputError(where + ": args.memwall." + key + " missing or not a name");
  std::string s = j[key].get<std::string>();
  std::string allowed;
  for (int i = 0; i < count; ++i) {
    E e = static_cast<E>(i);
    if (s == name(e))
      return e;
    allowed += (i ? ", " : "") + std::string(name(e));
  }
  throw InputError(where + ": args.memwall." + key + " '" + s + "' is not one of " + allowed);
}

double number(const nlohmann::json& j, const char* key, const std::string& where)
{
  if (!j.contains(key))
    return 0;
  if (!j[key].is_number())
    throw InputError(where + ": args.memwall." + key + " is not a number");
  double v = j[key].get<double>();
  if (!(v >= 0 && v < 1e30))
    throw InputError(where + ": args.memwall." + key + " must be a finite number >= 0");
  return v;
}

int64_t integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, int64_t def, const std::string& where)
{
  if (!j.contains(key))
    return def;
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi)
    throw InputError(where + ": args.memwall." + key + " must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  return j[key].get<int64_t>();
}

const char* category_name(MemCategory c) { return mem_category_name(c); }
const char* dtype_text(Dtype d) { return dtype_name(d); }

} // namespace

nlohmann::json device_to_json(const DeviceRef& d)
{
  const char* k = d.kind == DeviceKind::gpu ? "gpu" : d.kind == DeviceKind::host ? "host" : "nvme";
  return nlohmann::json::array({k, d.node, d.index});
}

DeviceRef device_from_json(const nlohmann::json& j, const std::string& where)
{
  if (!j.is_array() || j.size() != 3 || !j[0].is_string() || !j[1].is_number_integer() || !j[2].is_number_integer())
    throw InputError(where + ": a device is [\"gpu\"|\"host\"|\"nvme\", node, index]");
  std::string k = j[0].get<std::string>();
  int64_t node = j[1].get<int64_t>(), index = j[2].get<int64_t>();
  if (k != "gpu" && k != "host" && k != "nvme")
    throw InputError(where + ": device kind '" + k + "' is not one of gpu, host, nvme");
  if (node < 0 || node > 1'000'000 || index < 0 || index > 1'000)
    throw InputError(where + ": device node or index out of range");
  return {k == "gpu"    ? DeviceKind::gpu
          : k == "host" ? DeviceKind::host
                        : DeviceKind::nvme,
          static_cast<int32_t>(node), static_cast<int32_t>(index)};
}

nlohmann::json op_to_json(const Op& op)
{
  nlohmann::json j{{"kind", op_kind_name(op.kind)},
                   {"stream", stream_name(op.stream)},
                   {"phase", phase_name(op.phase)},
                   {"device", device_to_json(op.device)}};
  auto put = [&](const char* key, double v) {
    if (v != 0)
      j[key] = v;
  };
  put("flops", op.flops);
  put("model_flops", op.model_flops);
  put("bytes", op.bytes);
  put("seconds", op.seconds);
  switch (op.kind) {
    case OpKind::kernel:
    case OpKind::host_compute:
      j["kclass"] = kclass_name(op.kclass);
      j["dtype"]  = dtype_name(op.dtype);
      if (op.family != KernelFamily::generic)
        j["family"] = kernel_family_name(op.family);
      if (op.shape.known())
        j["shape"] = op.shape.groups() > 1
                         ? nlohmann::json{op.shape.m, op.shape.n, uint32_t(op.shape.k), op.shape.groups()}
                         : nlohmann::json{op.shape.m, op.shape.n, uint32_t(op.shape.k)};
      if (op.shape.known() && op.pass != GemmPass::forward)
        j["pass"] = gemm_pass_name(op.pass);
      if (op.kind == OpKind::host_compute)
        j["src"] = device_to_json(op.src);
      break;
    case OpKind::copy:
      j["src"] = device_to_json(op.src);
      j["dst"] = device_to_json(op.dst);
      if (op.pageable)
        j["pageable"] = true;
      break;
    case OpKind::collective:
      j["collective"] = collective_name(op.collective);
      j["group"]      = op.group;
      break;
    case OpKind::alloc:
    case OpKind::free:
      j["pool"]     = device_to_json(op.pool);
      j["category"] = mem_category_name(op.category);
      j["tensor"]   = op.tensor;
      break;
    case OpKind::chain: break; // exports expand chains (no DAG with records holds one)
  }
  return j;
}

Op op_from_json(const nlohmann::json& j, const std::string& where)
{
  if (!j.is_object())
    throw InputError(where + ": args.memwall is not an object");
  Op op;
  op.kind        = by_name(j, "kind", 6, op_kind_name, where); // not chain
  op.stream      = by_name(j, "stream", 8, stream_name, where);
  op.phase       = by_name(j, "phase", 5, phase_name, where);
  op.device      = device_from_json(j.value("device", nlohmann::json()), where);
  op.flops       = number(j, "flops", where);
  op.model_flops = number(j, "model_flops", where);
  op.bytes       = number(j, "bytes", where);
  op.seconds     = number(j, "seconds", where);
  switch (op.kind) {
    case OpKind::kernel:
    case OpKind::host_compute:
      op.kclass = by_name(j, "kclass", 4, kclass_name, where);
      if (j.contains("family"))
        op.family = by_name(j, "family", kernel_family_count, kernel_family_name, where);
      op.dtype = by_name(j, "dtype", static_cast<int>(all_dtypes().size()), dtype_text, where);
      if (j.contains("shape")) {
        const auto& s = j["shape"];
        bool ok       = s.is_array() && (s.size() == 3 || s.size() == 4);
        for (size_t i = 0; ok && i < s.size(); ++i)
          ok = s[i].is_number();
        if (!ok)
          throw InputError(where + ": args.memwall.shape is [m, n, k] or [m, n, k, groups]");
        op.shape = gemm_shape(s[0].get<double>(), s[1].get<double>(), s[2].get<double>(),
                              s.size() == 4 ? s[3].get<double>() : 1.0);
      }
      if (j.contains("pass"))
        op.pass = by_name(j, "pass", 4, gemm_pass_name, where);
      if (op.kind == OpKind::host_compute)
        op.src = device_from_json(j.value("src", nlohmann::json()), where);
      break;
    case OpKind::copy:
      op.src      = device_from_json(j.value("src", nlohmann::json()), where);
      op.dst      = device_from_json(j.value("dst", nlohmann::json()), where);
      op.pageable = j.value("pageable", false);
      break;
    case OpKind::collective:
      op.collective = by_name(j, "collective", 5, collective_name, where);
      op.group      = static_cast<int32_t>(integer(j, "group", 0, 1'000'000'000, -1, where));
      if (op.group < 0)
        throw InputError(where + ": a collective needs args.memwall.group");
      break;
    case OpKind::alloc:
    case OpKind::free:
      op.pool     = device_from_json(j.value("pool", nlohmann::json()), where);
      op.category = by_name(j, "category", static_cast<int>(mem_category_count), category_name, where);
      op.tensor   = static_cast<uint32_t>(integer(j, "tensor", 0, 0xfffffffe, 0, where));
      break;
    case OpKind::chain: break;
  }
  return op;
}

} // namespace memwall
