/* dissector/tss_keys.h: the TSS key file's entries (tss_keys.c), as tss.c opens frames with them.
 *
 * Ownership: the table is read from the file on the first sealed frame after the preference
 * was applied, then only read until it is freed (wiped). Only tss.c and tss_keys.c see it.
 */
#ifndef UETREF_DISSECTOR_TSS_KEYS_H_
#define UETREF_DISSECTOR_TSS_KEYS_H_

#include <stddef.h>

#include "uetref.h"

typedef enum { MODE_CLUSTER, MODE_DIRECT, MODE_SERVER, MODE_CLIENT } tss_mode;

/* One line of the key file. */
typedef struct {
  guint8 key[UET_TSS_KEY_BYTES];
  guint8 iv_mask[UET_TSS_IV_BYTES]; /* MODE_CLIENT */
  tss_mode mode;
  guint64 rekey_mask;
  guint rekey_shift;
  guint line;
} tss_key;

/* The preference uetref.tss_key_file: the key file's path ("": none). */
extern const char *uetref_tss_key_file;

/* Memory that held keys or plaintext; the volatile store is not optimised away. */
static inline void wipe(void *p, size_t n) {
  volatile guint8 *b = (volatile guint8 *)p;
  while (n--) *b++ = 0;
}

/* The key file's entries for (SDI, AN), a GPtrArray of tss_key in file order (several for
 * mode=client only); NULL: none. Reads the file first when the table was freed. */
const GPtrArray *uetref_tss_find_keys(guint32 sdi, guint32 an);
/* How many lines (or reads) of the key file failed; *first: the first problem (NULL: none). */
guint uetref_tss_key_problems(const char **first);
/* Wipes and frees the table: the file is read again on the next sealed frame. */
void uetref_tss_free_keys(void);

#endif /* UETREF_DISSECTOR_TSS_KEYS_H_ */
