// io_uring flags of the kernel's uapi header (<linux/io_uring.h>) that liburing 2.3's bundled
// copy of it predates; 0 where the system's header lacks them too. They are read in a
// translation unit of their own: both headers share one include guard, and under C++ they
// disagree on layouts (<linux/io_uring.h> declares flexible arrays with __DECLARE_FLEX_ARRAY,
// whose empty struct has size 1 in C++), so neither may precede <liburing.h> in uring_io.cc.
#pragma once

#include <cstdint>

namespace uet::io::uapi {

extern const uint16_t kSendZcReportUsage;   // IORING_SEND_ZC_REPORT_USAGE (Linux 6.2+)
extern const uint32_t kNotifUsageZcCopied;  // IORING_NOTIF_USAGE_ZC_COPIED, its answer

}  // namespace uet::io::uapi
