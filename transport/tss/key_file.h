// The TSS key file (spec/uet.md §5.4: keys are configuration here, §5.8), the one file both
// the Wireshark plugin (dissector/README.md "TSS keys") and the tools read. One domain key a
// line:
//
//   sdi=<N> an=<0|1> mode=<cluster|direct|server|client> key=<64 hex digits>
//   [iv_mask=<24 hex digits>, mode=client only] [rekey_mask=<N>] [rekey_shift=<N>] [job=<N>]
//   [epoch=<N>]
//
// Numbers are decimal or 0x hex; fields in any order, separated by spaces or tabs; `#` starts
// a comment. The lines of one sdi make one DomainConfig: their keys installed under their
// ANs, and one mode, rekey_mask, rekey_shift, job (the JobID the domain is bound to,
// DomainConfig::job_id) and epoch (DomainConfig::epoch, 0 by default; a server-mode client's
// key is its epoch's), which those lines must agree on. Where the
// dissector skips a bad line with a warning, this reader refuses the whole file: a tool must
// not run with fewer keys than the file meant.
//
// Key material: the file's bytes are wiped once parsed, and no message quotes a value (only
// the file, the line, the field's name and the form it must have).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/tss/sublayer.h"

namespace uet::tss {

// Largest key file read (a few lines per domain; anything near this is not a key file).
inline constexpr size_t kMaxKeyFileBytes = 1 << 20;

// The domains of a key file's text, in the order of each sdi's first line. `name` names the
// file in messages. InvalidArgument, naming the line, for: a token that is not name=value,
// an unknown or repeated name, a value out of its range (sdi 0..2^24-1, an 0 or 1, key 64
// hex digits, rekey_mask bits 0..47, rekey_shift 0..47), a missing sdi/an/mode/key, a second
// key for one sdi and an, two lines of one sdi that differ in mode or rekey; and for a text
// without a key.
absl::StatusOr<std::vector<DomainConfig>> parse_key_file(std::string_view text,
                                                         std::string_view name);

// Reads the key file at `path` into an enabled TssConfig with its domains, sending in
// `tx_sdi` (nullopt: the domain of the file's first key) under association `tx_an`; the
// other fields keep TssConfig's defaults. NotFound if the file cannot be read, the errors of
// parse_key_file, OutOfRange if the file has no key for tx_sdi and tx_an.
absl::StatusOr<TssConfig> read_key_file(const std::string& path,
                                        std::optional<uint32_t> tx_sdi = std::nullopt,
                                        uint8_t tx_an = 0);

// The key file holding `domains` (a line per installed key; rekey fields when they differ
// from DomainConfig's defaults), which parse_key_file reads back as the same keys, modes and
// rekey fields.
std::string key_file_text(std::span<const DomainConfig> domains);

// Server mode (spec/uet.md §5.3): what the client at `client_ip4` is given for each mode=server
// domain of `server` (the other domains are left out): a kClient domain with the key and IV
// mask client_key() derives for each installed association, in `epoch` (nullopt: the server
// domain's), bound to the same job. InvalidArgument if `server` has no server domain.
absl::StatusOr<std::vector<DomainConfig>> client_domains(std::span<const DomainConfig> server,
                                                         uint32_t client_ip4,
                                                         std::optional<uint16_t> epoch);
// Writes key_file_text(domains) to `path`, readable and writable by its owner only.
absl::Status write_key_file(const std::string& path, std::span<const DomainConfig> domains);

}  // namespace uet::tss
