#include "transport/wire/wire_error.h"

#include <ostream>

namespace uet::wire {

std::string_view to_string(WireError e) noexcept {
  switch (e) {
#define UET_WIRE_ERROR_STR(en, s) \
  case WireError::en:             \
    return s;
    UET_WIRE_ERRORS(UET_WIRE_ERROR_STR)
#undef UET_WIRE_ERROR_STR
  }
  return "unknown wire error";
}

std::string_view name(WireError e) noexcept {
  switch (e) {
#define UET_WIRE_ERROR_NAME(en, s) \
  case WireError::en:              \
    return std::string_view(#en).substr(1);
    UET_WIRE_ERRORS(UET_WIRE_ERROR_NAME)
#undef UET_WIRE_ERROR_NAME
  }
  return "Unknown";
}

std::ostream& operator<<(std::ostream& os, WireError e) { return os << name(e); }

}  // namespace uet::wire
