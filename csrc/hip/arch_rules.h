// Which AMD devices the CK backend runs on and which fp8 flavour each one's MFMA unit decodes.
// Plain C++ (tested with g++); the runner feeds it hipDeviceProp_t::gcnArchName.
#pragma once

#include <string>

#include "../ckgemm.h"

namespace ckgemm {
namespace ck {

// Why a problem of this dtype cannot run on a device with this gcnArchName (e.g.
// "gfx942:sramecc+:xnack-"), or "" when it can. The same fp8 kernel serves both fp8 dtypes: the
// hardware decides the encoding (gfx94x: e4m3fnuz, bias 8; gfx95x: OCP e4m3, bias 7), so the
// flavour the device does not use must be refused here or it would be silently misread.
inline std::string arch_rejects(DType dtype, const std::string& gcn_arch_name) {
  const std::string arch = gcn_arch_name.substr(0, gcn_arch_name.find(':'));
  const bool gfx94 = arch.rfind("gfx94", 0) == 0;
  const bool gfx95 = arch.rfind("gfx95", 0) == 0;
  if (!gfx94 && !gfx95)
    return "the CK backend targets gfx942 (MI300) and gfx950 (MI350); this device is " + arch;
  if (dtype == DType::FP8_E4M3 && gfx94)
    return "float8_e4m3fn (OCP) is not the fp8 of " + arch + ", whose MFMA decodes float8_e4m3fnuz";
  if (dtype == DType::FP8_E4M3_FNUZ && gfx95)
    return "float8_e4m3fnuz is not the fp8 of " + arch + ", whose MFMA decodes OCP float8_e4m3fn";
  return "";
}

}  // namespace ck
}  // namespace ckgemm
