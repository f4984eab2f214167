// See uring_uapi.h. No liburing here: only the kernel's uapi header.
#include "dpdk-io/uring_uapi.h"

#include <linux/io_uring.h>

namespace uet::io::uapi {

#ifdef IORING_SEND_ZC_REPORT_USAGE
const uint16_t kSendZcReportUsage = IORING_SEND_ZC_REPORT_USAGE;
const uint32_t kNotifUsageZcCopied = IORING_NOTIF_USAGE_ZC_COPIED;
#else
const uint16_t kSendZcReportUsage = 0;
const uint32_t kNotifUsageZcCopied = 0;
#endif

}  // namespace uet::io::uapi
