/* dissector/tss_keys.c: the TSS key file (spec/uet.md §5), read into a table by SDI and AN.
 *
 * Key file (dissector/README.md): one key a line,
 *   sdi=<N> an=<0|1> mode=<cluster|direct|server|client> key=<64 hex digits>
 *   [iv_mask=<24 hex digits>, mode=client only] [rekey_mask=<N>] [rekey_shift=<N>] [job=<N>]
 *   [epoch=<N>]
 * numbers decimal or 0x hex, '#' starts a comment. A line that does not parse is skipped and
 * reported (a warning in the log when the file is read, expert info on every sealed frame).
 * A capture sees many clients of one server: several mode=client lines may share an SDI and
 * AN, and each is tried until a tag matches; any other mode has one line per SDI and AN.
 *
 * Ownership: the key table is read from the file on the first sealed frame after the
 * preference was applied, then only read. Keys never enter the tree, the log or an expert
 * text, and are wiped when the table is freed.
 */
#include "tss_keys.h"

#include <string.h>

#include "uetref.h"

/* §5.3: our default rekey interval, the spec example's: a new packet key every 2^32 frames. */
#define DEFAULT_REKEY_MASK G_GUINT64_CONSTANT(0x0000FFFF00000000)
#define DEFAULT_REKEY_SHIFT 32

const char *uetref_tss_key_file = "";
static GHashTable *keys;    /* (SDI << 1 | AN) -> GPtrArray of tss_key; NULL: read again */
static char *keys_problem;  /* the key file's first problem, NULL when it had none */
static guint keys_problems; /* how many lines (or reads) failed */

static void free_key(gpointer p) {
  wipe(p, sizeof(tss_key));
  g_free(p);
}

static void free_key_list(gpointer p) { g_ptr_array_free((GPtrArray *)p, TRUE); }

static void problem(const char *path, guint line, const char *what) {
  keys_problems++;
  char *text = line ? g_strdup_printf("line %u: %s", line, what) : g_strdup(what);
  ws_warning("uetref: TSS key file %s: %s", path, text);
  if (keys_problem)
    g_free(text);
  else
    keys_problem = text;
}

/* Decimal or 0x hex, at most `max`. */
static gboolean parse_number(const char *s, guint64 max, guint64 *out) {
  guint base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  return s[0] != '\0' && g_ascii_string_to_unsigned(s, base, 0, max, out, NULL);
}

static gboolean parse_hex(const char *s, guint8 *out, size_t bytes) {
  if (strlen(s) != 2 * bytes) return FALSE;
  for (guint i = 0; i < bytes; i++) {
    const int hi = g_ascii_xdigit_value(s[2 * i]);
    const int lo = g_ascii_xdigit_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return FALSE;
    out[i] = (guint8)(hi << 4 | lo);
  }
  return TRUE;
}

/* job= binds a domain to a job (spec/uet.md §5.7) and epoch= sets the epoch it sends in: the
 * endpoints' business (a frame carries its epoch), read and checked here only so one file
 * serves both. */
enum { K_SDI, K_AN, K_MODE, K_KEY, K_REKEY_MASK, K_REKEY_SHIFT, K_JOB, K_IV_MASK, K_EPOCH, K_COUNT };
static const char *const key_names[K_COUNT] = {"sdi",         "an",  "mode",    "key",  "rekey_mask",
                                               "rekey_shift", "job", "iv_mask", "epoch"};

/* The value of name `n` into *k, or the SDI or AN; FALSE when it is out of range. */
static gboolean parse_value(int n, const char *value, tss_key *k, guint64 *sdi, guint64 *an) {
  guint64 v = 0;
  gboolean ok = TRUE;
  switch (n) {
    case K_SDI:
      ok = parse_number(value, 0xFFFFFF, sdi);
      break;
    case K_AN:
      ok = parse_number(value, 1, an);
      break;
    case K_MODE:
      if (strcmp(value, "cluster") == 0)
        k->mode = MODE_CLUSTER;
      else if (strcmp(value, "direct") == 0)
        k->mode = MODE_DIRECT;
      else if (strcmp(value, "server") == 0)
        k->mode = MODE_SERVER;
      else if (strcmp(value, "client") == 0)
        k->mode = MODE_CLIENT;
      else
        ok = FALSE;
      break;
    case K_KEY:
      ok = parse_hex(value, k->key, UET_TSS_KEY_BYTES);
      break;
    case K_IV_MASK:
      ok = parse_hex(value, k->iv_mask, UET_TSS_IV_BYTES);
      break;
    case K_EPOCH:
      ok = parse_number(value, 0xFFFF, &v);
      break;
    case K_REKEY_MASK:
      ok = parse_number(value, G_MAXUINT64, &k->rekey_mask);
      break;
    case K_REKEY_SHIFT:
      ok = parse_number(value, 63, &v);
      k->rekey_shift = (guint)v;
      break;
    case K_JOB:
      ok = parse_number(value, 0xFFFFFF, &v);
      break;
  }
  return ok;
}

/* One line, comment already cut. Returns NULL when it holds a key (then *id and *k are set)
 * or nothing (*id is G_MAXUINT32); else what is wrong, never quoting a value. */
static char *parse_line(char *text, guint32 *id, tss_key *k) {
  gboolean seen[K_COUNT] = {FALSE};
  guint64 sdi = 0, an = 0;
  char *err = NULL;
  char **tokens = g_strsplit_set(text, " \t\r", -1);
  k->mode = MODE_CLUSTER;
  k->rekey_mask = DEFAULT_REKEY_MASK;
  k->rekey_shift = DEFAULT_REKEY_SHIFT;
  *id = G_MAXUINT32;
  for (char **t = tokens; *t && !err; t++) {
    if ((*t)[0] == '\0') continue;
    char *eq = strchr(*t, '=');
    if (!eq) {
      err = g_strdup("expected name=value pairs");
      break;
    }
    *eq = '\0';
    const char *value = eq + 1;
    int n = 0;
    while (n < K_COUNT && strcmp(*t, key_names[n]) != 0) n++;
    if (n == K_COUNT) {
      err = g_strdup_printf("unknown name \"%.32s\"", *t);
    } else if (seen[n]) {
      err = g_strdup_printf("%s given twice", key_names[n]);
    } else {
      seen[n] = TRUE;
      const gboolean ok = parse_value(n, value, k, &sdi, &an);
      if (!ok) {
        static const char *const want[K_COUNT] = {"a number from 0 to 16777215",
                                                  "0 or 1",
                                                  "cluster, direct, server or client",
                                                  "64 hex digits",
                                                  "a 64-bit number",
                                                  "a number from 0 to 63",
                                                  "a number from 0 to 16777215",
                                                  "24 hex digits",
                                                  "a number from 0 to 65535"};
        err = g_strdup_printf("%s must be %s", key_names[n], want[n]);
      }
    }
  }
  gboolean any = FALSE;
  for (int n = 0; n < K_COUNT; n++) any |= seen[n];
  for (int n = K_SDI; any && !err && n <= K_KEY; n++)
    if (!seen[n]) err = g_strdup_printf("%s= missing", key_names[n]);
  if (any && !err && k->mode == MODE_CLIENT && !seen[K_IV_MASK])
    err = g_strdup("iv_mask= missing (mode=client)");
  if (any && !err && k->mode != MODE_CLIENT && seen[K_IV_MASK])
    err = g_strdup("iv_mask= is for mode=client only");
  if (any && !err) *id = (guint32)(sdi << 1 | an);
  for (char **t = tokens; *t; t++) wipe(*t, strlen(*t));
  g_strfreev(tokens);
  return err;
}

void uetref_tss_free_keys(void) {
  if (keys) g_hash_table_destroy(keys);
  keys = NULL;
  g_free(keys_problem);
  keys_problem = NULL;
  keys_problems = 0;
}

static void load_keys(void) {
  const char *path = uetref_tss_key_file ? uetref_tss_key_file : "";
  uetref_tss_free_keys();
  keys = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, free_key_list);
  if (path[0] == '\0') return;
  gchar *text = NULL;
  gsize len = 0;
  GError *gerr = NULL;
  if (!g_file_get_contents(path, &text, &len, &gerr)) {
    char *what = g_strdup_printf("cannot be read (%s)", gerr->message);
    problem(path, 0, what);
    g_free(what);
    g_error_free(gerr);
    return;
  }
  char **lines = g_strsplit(text, "\n", -1);
  wipe(text, len);
  g_free(text);
  for (guint i = 0; lines[i]; i++) {
    char *hash = strchr(lines[i], '#');
    if (hash) *hash = '\0';
    tss_key k;
    guint32 id;
    char *err = parse_line(lines[i], &id, &k);
    k.line = i + 1;
    if (!err && id != G_MAXUINT32) {
      GPtrArray *list = (GPtrArray *)g_hash_table_lookup(keys, GUINT_TO_POINTER(id));
      const tss_key *first = list ? (const tss_key *)g_ptr_array_index(list, 0) : NULL;
      if (first && (first->mode != MODE_CLIENT || k.mode != MODE_CLIENT)) {
        err = g_strdup_printf("sdi %u an %u already has a key (line %u); this one is ignored",
                              id >> 1, id & 1, first->line);
      } else {
        if (!list) {
          list = g_ptr_array_new_with_free_func(free_key);
          g_hash_table_insert(keys, GUINT_TO_POINTER(id), list);
        }
        g_ptr_array_add(list, g_memdup2(&k, sizeof k));
      }
    }
    if (err) problem(path, i + 1, err);
    g_free(err);
    wipe(&k, sizeof k);
    wipe(lines[i], strlen(lines[i]));
  }
  g_strfreev(lines);
}

const GPtrArray *uetref_tss_find_keys(guint32 sdi, guint32 an) {
  if (!keys) load_keys();
  return (const GPtrArray *)g_hash_table_lookup(keys, GUINT_TO_POINTER(sdi << 1 | an));
}

guint uetref_tss_key_problems(const char **first) {
  *first = keys_problem;
  return keys_problems;
}
