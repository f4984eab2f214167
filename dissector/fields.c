/* dissector/fields.c: the header fields of spec/uet.def and spec/rocev2.def, as Wireshark
 * header fields.
 *
 * Every F row becomes a tree item; every (filter prefix, field name) pair becomes one hf
 * (spec/README.md: rows sharing a prefix and a name have the same width and kind). The FT type
 * follows from width and kind, the bitmask from the mask column and the value_string from the
 * value table, exactly as spec/README.md's table of kinds says. Nothing here names a field:
 * a row added to a .def file is registered and shown after a rebuild.
 *
 * Overlays (spec/uet.md §1.3): a row whose title ends in a condition such as "(SYN=1)" or
 * "(cc_type=NSCC)" is shown only when the named row of the same header has that value. An
 * overlay row titled "Reserved ..." is checked to be zero under its condition (§6 rules 6, 10);
 * RSVD rows are checked always (§6 rule 2).
 *
 * Ownership: the arrays below are filled once by uetref_fields_register() and read-only after.
 */
#include <epan/expert.h>
#include <string.h>
#include <wsutil/wslog.h>

#include "uetref.h"

/* -------------------------------------------------------------- value tables */
#define VS_ROW_(k, v, n, d) {v, n},
#define VS_DEF_UET_(id, Name, title) \
  const value_string uetref_vs_##id[] = {UET_VALS_##id(VS_ROW_){0, NULL}};
#define VS_DEF_ROCE_(id, Name, title) \
  const value_string uetref_vs_##id[] = {ROCEV2_VALS_##id(VS_ROW_){0, NULL}};
UET_VALUE_TABLES(VS_DEF_UET_)
ROCEV2_VALUE_TABLES(VS_DEF_ROCE_)
const value_string uetref_vs_none[] = {{0, NULL}};
#define VS_MEANING_(k, v, n, d) {v, d},
const value_string uetref_vs_nack_code_meaning[] = {UET_VALS_nack_code(VS_MEANING_){0, NULL}};

/* ------------------------------------------------------------------- rows */
#define ROW_(name, off, width, mask, kind, vals, title) \
  {#name, off, width, mask, UETREF_##kind, uetref_vs_##vals, title},
#define ROWS_UET_(id, Name, size, prefix, section, title) \
  static const uetref_row rows_##id[] = {UET_FIELDS_##id(ROW_)};
#define ROWS_ROCE_(id, Name, size, prefix, section, title) \
  static const uetref_row rows_##id[] = {ROCEV2_FIELDS_##id(ROW_)};
UET_HEADERS(ROWS_UET_)
ROCEV2_HEADERS(ROWS_ROCE_)

#define HDR_UET_(id, Name, size, prefix, section, title)                      \
  {#id,       UETREF_FILTER "." prefix, size, "spec/uet.md §" section, title, \
   rows_##id, G_N_ELEMENTS(rows_##id)},
#define HDR_ROCE_(id, Name, size, prefix, section, title)                             \
  {#id,       UETREF_ROCE_FILTER "." prefix, size, "spec/rocev2.md §" section, title, \
   rows_##id, G_N_ELEMENTS(rows_##id)},
const uetref_header_desc uetref_headers[UETREF_H_COUNT] = {UET_HEADERS(HDR_UET_)
                                                               ROCEV2_HEADERS(HDR_ROCE_)};

/* 0: UET (proto_uetref), 1: RoCEv2 (proto_uetref_rocev2). */
#define FAM_UET_(id, Name, size, prefix, section, title) 0,
#define FAM_ROCE_(id, Name, size, prefix, section, title) 1,
static const guint8 hdr_family[UETREF_H_COUNT] = {UET_HEADERS(FAM_UET_) ROCEV2_HEADERS(FAM_ROCE_)};

#define COUNT_(id, Name, size, prefix, section, title) +G_N_ELEMENTS(rows_##id)
#define TOTAL_ROWS (0 UET_HEADERS(COUNT_) ROCEV2_HEADERS(COUNT_))

#define NAME_STR_(n) #n,
static const char *const name_strings[UETREF_N_COUNT] = {UETREF_NAMES(NAME_STR_)};

/* --------------------------------------------------------- registration state */
static int hf_ids[TOTAL_ROWS];               /* one per distinct (prefix, name) */
static hf_register_info hf_info[TOTAL_ROWS]; /* hf_info[i].p_id == &hf_ids[i] */
static guint first_row[UETREF_H_COUNT];      /* flat index of a header's first row */
static int row_slot[TOTAL_ROWS];             /* flat row -> index into hf_ids */
static gboolean row_direct[TOTAL_ROWS];      /* the hf's bitmask is the row's */
static int row_cond[TOTAL_ROWS];             /* overlay: row (within header) it depends on */
static guint64 row_cond_value[TOTAL_ROWS];
static gboolean row_rsvd_overlay[TOTAL_ROWS]; /* "Reserved ..." overlay: zero under its condition */
static int name_row[UETREF_H_COUNT][UETREF_N_COUNT];

static int hf_prefix_ids[UETREF_H_COUNT]; /* FT_NONE item per distinct prefix */
static hf_register_info hf_prefix_info[UETREF_H_COUNT];
static int hdr_prefix_slot[UETREF_H_COUNT];

static gint ett_hdr[UETREF_H_COUNT];
static expert_field ei_truncated[2] = {EI_INIT, EI_INIT};
static expert_field ei_snaplen[2] = {EI_INIT, EI_INIT};
static expert_field ei_reserved[2] = {EI_INIT, EI_INIT};

/* ------------------------------------------------------------------ helpers */
static guint mask_shift(guint64 mask) {
  guint s = 0;
  if (mask == 0) return 0;
  while (!(mask & 1)) {
    mask >>= 1;
    s++;
  }
  return s;
}

static gboolean is_integer_row(const uetref_row *r) {
  return r->kind != UETREF_BYTES && r->width >= 1 && r->width <= 8;
}

/* The raw big-endian word of an integer row (the caller checked the bytes are there). */
static guint64 row_word(tvbuff_t *tvb, int offset, const uetref_row *r) {
  guint64 v = 0;
  for (guint i = 0; i < r->width; i++)
    v = (v << 8) | tvb_get_guint8(tvb, offset + (int)(r->offset + i));
  return v;
}

static guint64 row_value(guint64 word, const uetref_row *r) {
  return r->mask ? (word & r->mask) >> mask_shift(r->mask) : word;
}

static guint row_bits(const uetref_row *r) {
  if (!r->mask) return r->width * 8;
  guint n = 0;
  for (guint64 m = r->mask; m; m &= m - 1) n++;
  return n;
}

static enum ftenum uint_type(guint width) {
  static const enum ftenum t[9] = {FT_NONE,   FT_UINT8,  FT_UINT16, FT_UINT24, FT_UINT32,
                                   FT_UINT40, FT_UINT48, FT_UINT56, FT_UINT64};
  return width <= 8 ? t[width] : FT_BYTES;
}

static enum ftenum int_type(guint width) {
  static const enum ftenum t[9] = {FT_NONE,  FT_INT8,  FT_INT16, FT_INT24, FT_INT32,
                                   FT_INT40, FT_INT48, FT_INT56, FT_INT64};
  return width <= 8 ? t[width] : FT_BYTES;
}

/* The title without a trailing overlay condition: "Destination PDC ID (SYN=0)" -> "...ID". */
static char *strip_condition(const char *title) {
  const char *open = strrchr(title, '(');
  size_t n = strlen(title);
  if (open && n > 0 && title[n - 1] == ')' && strchr(open, '=') && !strchr(open, ' ')) {
    while (open > title && open[-1] == ' ') open--;
    return g_strndup(title, (gsize)(open - title));
  }
  return g_strdup(title);
}

/* Parses the overlay condition "(NAME=VALUE)" at the end of row `ri`'s title. */
static void parse_condition(uetref_hdr h, guint ri) {
  const uetref_header_desc *d = &uetref_headers[h];
  const uetref_row *r = &d->rows[ri];
  const guint flat = first_row[h] + ri;
  row_cond[flat] = -1;
  const char *open = strrchr(r->title, '(');
  const size_t n = strlen(r->title);
  if (!open || n == 0 || r->title[n - 1] != ')' || strchr(open, ' ')) return;
  const char *eq = strchr(open, '=');
  if (!eq) return;
  char *field = g_ascii_strdown(open + 1, eq - open - 1);
  char *value = g_strndup(eq + 1, (gsize)(r->title + n - 1 - (eq + 1)));
  for (guint j = 0; j < d->n_rows; j++) {
    if (strcmp(d->rows[j].name, field) != 0) continue;
    gboolean ok = FALSE;
    guint64 v = 0;
    if (g_ascii_isdigit(value[0])) {
      v = g_ascii_strtoull(value, NULL, 0);
      ok = TRUE;
    } else {
      for (const value_string *vs = d->rows[j].vals; vs->strptr; vs++) {
        if (strcmp(vs->strptr, value) == 0) {
          v = vs->value;
          ok = TRUE;
        }
      }
    }
    if (ok) {
      row_cond[flat] = (int)j;
      row_cond_value[flat] = v;
      row_rsvd_overlay[flat] = g_str_has_prefix(r->title, "Reserved");
    }
    break;
  }
  if (row_cond[flat] < 0)
    ws_warning("uetref: %s.%s: overlay condition (%s=%s) names no row or value; shown always",
               d->prefix, r->name, field, value);
  g_free(field);
  g_free(value);
}

static void fill_hf(hf_register_info *ri, int *id, const char *name, const char *abbrev,
                    enum ftenum type, int display, const void *strings, guint64 bitmask,
                    const char *blurb) {
  header_field_info tmpl = {name, abbrev, type, display, strings, bitmask, blurb, HFILL};
  ri->p_id = id;
  ri->hfinfo = tmpl;
}

/* --------------------------------------------------------------- registration */
void uetref_fields_register(void) {
  const int protos[2] = {proto_uetref, proto_uetref_rocev2};
  guint64 slot_mask[TOTAL_ROWS];
  int slot_first[TOTAL_ROWS]; /* flat row that defined the slot */
  guint n_slots = 0, flat = 0;
  guint n_slots_family[2] = {0, 0};

  GHashTable *abbrev_slot =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL); /* abbrev -> slot + 1 */
  GHashTable *prefix_slot = g_hash_table_new(g_str_hash, g_str_equal);
  guint n_prefix = 0, n_prefix_family[2] = {0, 0};

  /* Pass 1: distinct (prefix, name) slots; a slot whose rows disagree on the mask gets none. */
  for (int h = 0; h < UETREF_H_COUNT; h++) {
    const uetref_header_desc *d = &uetref_headers[h];
    DISSECTOR_ASSERT(d->n_rows <= UETREF_MAX_ROWS);
    first_row[h] = flat;
    for (guint i = 0; i < d->n_rows; i++, flat++) {
      char *abbrev = g_strdup_printf("%s.%s", d->prefix, d->rows[i].name);
      gpointer s = g_hash_table_lookup(abbrev_slot, abbrev);
      if (s) {
        row_slot[flat] = GPOINTER_TO_INT(s) - 1;
        if (slot_mask[row_slot[flat]] != d->rows[i].mask) slot_mask[row_slot[flat]] = G_MAXUINT64;
        g_free(abbrev);
      } else {
        row_slot[flat] = (int)n_slots;
        slot_mask[n_slots] = d->rows[i].mask;
        slot_first[n_slots] = (int)flat;
        g_hash_table_insert(abbrev_slot, abbrev, GINT_TO_POINTER(n_slots + 1));
        n_slots++;
        n_slots_family[hdr_family[h]]++;
      }
    }
    gpointer p = g_hash_table_lookup(prefix_slot, d->prefix);
    if (p) {
      hdr_prefix_slot[h] = GPOINTER_TO_INT(p) - 1;
    } else {
      hdr_prefix_slot[h] = (int)n_prefix;
      hf_prefix_ids[n_prefix] = -1;
      fill_hf(&hf_prefix_info[n_prefix], &hf_prefix_ids[n_prefix],
              g_strdup_printf("Header %s", d->prefix), d->prefix, FT_NONE, BASE_NONE, NULL, 0,
              "One of the headers with this filter prefix");
      g_hash_table_insert(prefix_slot, (gpointer)d->prefix, GINT_TO_POINTER(n_prefix + 1));
      n_prefix++;
      n_prefix_family[hdr_family[h]]++;
    }
    for (int n = 0; n < UETREF_N_COUNT; n++) {
      name_row[h][n] = -1;
      for (guint i = 0; i < d->n_rows; i++)
        if (strcmp(d->rows[i].name, name_strings[n]) == 0) name_row[h][n] = (int)i;
    }
    ett_hdr[h] = -1;
  }
  g_hash_table_destroy(prefix_slot);
  g_hash_table_destroy(abbrev_slot);
  /* A field the code reads by name but no header has would read as 0 everywhere: a renamed
   * .def row must stop the plugin at registration, not mislead an analysis. */
  for (int n = 0; n < UETREF_N_COUNT; n++) {
    gboolean found = FALSE;
    for (int h = 0; h < UETREF_H_COUNT && !found; h++) found = name_row[h][n] >= 0;
    if (!found)
      ws_error("uetref: the dissector reads the field \"%s\", which no header of spec/uet.def or "
               "spec/rocev2.def has", name_strings[n]);
  }

  /* Pass 2: one hf_register_info per slot, typed from its first row. */
  for (guint s = 0; s < n_slots; s++) {
    guint f = (guint)slot_first[s];
    int h = 0;
    while (h + 1 < UETREF_H_COUNT && first_row[h + 1] <= f) h++;
    const uetref_header_desc *d = &uetref_headers[h];
    const uetref_row *r = &d->rows[f - first_row[h]];
    const guint64 bitmask = slot_mask[s] == G_MAXUINT64 ? 0 : r->mask;
    const void *strings =
        (r->vals != uetref_vs_none && r->width <= 4) ? (const void *)VALS(r->vals) : NULL;
    enum ftenum type;
    int display;
    switch (r->kind) {
      case UETREF_UDEC:
        type = uint_type(r->width);
        display = BASE_DEC;
        break;
      case UETREF_SDEC:
        type = int_type(r->width);
        display = BASE_DEC;
        break;
      case UETREF_FLAG:
        type = FT_BOOLEAN;
        display = (int)(r->width * 8);
        strings = NULL;
        break;
      case UETREF_UHEX:
      case UETREF_RSVD:
        type = uint_type(r->width);
        display = BASE_HEX;
        break;
      case UETREF_BYTES:
      default:
        type = FT_BYTES;
        display = BASE_NONE;
        strings = NULL;
        break;
    }
    if (type == FT_BYTES) display = BASE_NONE;
    char *blurb = g_strdup_printf("%s, %s (%s): %s", d->section, d->title, d->id, r->title);
    hf_ids[s] = -1;
    fill_hf(&hf_info[s], &hf_ids[s], strip_condition(r->title),
            g_strdup_printf("%s.%s", d->prefix, r->name), type, display, strings,
            type == FT_BYTES ? 0 : bitmask, blurb);
  }
  for (int h = 0; h < UETREF_H_COUNT; h++) {
    for (guint i = 0; i < uetref_headers[h].n_rows; i++) {
      const guint f = first_row[h] + i;
      const uetref_row *r = &uetref_headers[h].rows[i];
      row_direct[f] = !is_integer_row(r) || hf_info[row_slot[f]].hfinfo.bitmask == r->mask;
      parse_condition((uetref_hdr)h, i);
    }
  }

  /* UET slots come first (its headers come first), then RoCEv2's. */
  proto_register_field_array(protos[0], hf_info, (int)n_slots_family[0]);
  proto_register_field_array(protos[1], hf_info + n_slots_family[0], (int)n_slots_family[1]);
  proto_register_field_array(protos[0], hf_prefix_info, (int)n_prefix_family[0]);
  proto_register_field_array(protos[1], hf_prefix_info + n_prefix_family[0],
                             (int)n_prefix_family[1]);

  static gint *ett_ptrs[UETREF_H_COUNT];
  for (int h = 0; h < UETREF_H_COUNT; h++) ett_ptrs[h] = &ett_hdr[h];
  proto_register_subtree_array(ett_ptrs, UETREF_H_COUNT);

  static ei_register_info ei_uet[] = {
      {&ei_truncated[0],
       {"uetref.expert.truncated", PI_MALFORMED, PI_ERROR,
        "Header truncated (spec/uet.md §6 rule 1)", EXPFILL}},
      {&ei_snaplen[0],
       {"uetref.expert.snaplen", PI_UNDECODED, PI_NOTE,
        "Header cut short by the capture snapshot length", EXPFILL}},
      {&ei_reserved[0],
       {"uetref.expert.reserved", PI_PROTOCOL, PI_WARN,
        "Reserved bits set (spec/uet.md §6 rules 2, 6, 10)", EXPFILL}},
  };
  static ei_register_info ei_roce[] = {
      {&ei_truncated[1],
       {"uetref.rocev2.expert.truncated", PI_MALFORMED, PI_ERROR,
        "Header truncated (spec/rocev2.md §7 rules 1, 5)", EXPFILL}},
      {&ei_snaplen[1],
       {"uetref.rocev2.expert.snaplen", PI_UNDECODED, PI_NOTE,
        "Header cut short by the capture snapshot length", EXPFILL}},
      {&ei_reserved[1],
       {"uetref.rocev2.expert.reserved", PI_PROTOCOL, PI_WARN,
        "Reserved bits set (spec/rocev2.md §7 rule 2)", EXPFILL}},
  };
  expert_register_field_array(expert_register_protocol(protos[0]), ei_uet, array_length(ei_uet));
  expert_register_field_array(expert_register_protocol(protos[1]), ei_roce, array_length(ei_roce));
}

/* ---------------------------------------------------------------- dissection */
gboolean uetref_has(uetref_hdr hdr, uetref_name name) { return name_row[hdr][name] >= 0; }

guint64 uetref_get(const uetref_hdr_vals *hv, uetref_name name) {
  const int i = name_row[hv->hdr][name];
  return i >= 0 ? hv->v[i] : 0;
}

gint64 uetref_get_signed(const uetref_hdr_vals *hv, uetref_name name) {
  const int i = name_row[hv->hdr][name];
  if (i < 0) return 0;
  const guint bits = row_bits(&uetref_headers[hv->hdr].rows[i]);
  const guint64 v = hv->v[i];
  if (bits >= 64) return (gint64)v;
  const guint64 sign = G_GUINT64_CONSTANT(1) << (bits - 1);
  return (gint64)(v ^ sign) - (gint64)sign;
}

proto_item *uetref_item(const uetref_hdr_vals *hv, uetref_name name) {
  const int i = name_row[hv->hdr][name];
  return i >= 0 ? hv->items[i] : NULL;
}

gboolean uetref_peek(tvbuff_t *tvb, int offset, uetref_hdr hdr, uetref_name name, guint64 *value) {
  const int i = name_row[hdr][name];
  if (i < 0) return FALSE;
  const uetref_row *r = &uetref_headers[hdr].rows[i];
  if (!is_integer_row(r)) return FALSE;
  if (offset < 0 || tvb_captured_length_remaining(tvb, offset) < (gint)(r->offset + r->width))
    return FALSE;
  *value = row_value(row_word(tvb, offset, r), r);
  return TRUE;
}

/* "..1. ..0." style picture of the mask's bits in the raw word. */
static char *bit_picture(wmem_allocator_t *scope, guint64 word, const uetref_row *r) {
  const guint bits = r->width * 8;
  char *s = (char *)wmem_alloc(scope, bits + bits / 4 + 1);
  char *p = s;
  for (guint b = bits; b-- > 0;) {
    const guint64 bit = G_GUINT64_CONSTANT(1) << b;
    *p++ = (r->mask & bit) ? ((word & bit) ? '1' : '0') : '.';
    if (b % 4 == 0 && b != 0) *p++ = ' ';
  }
  *p = '\0';
  return s;
}

static proto_item *add_row(proto_tree *t, packet_info *pinfo, tvbuff_t *tvb, int offset, guint flat,
                           const uetref_row *r, guint64 word, guint64 value) {
  const int hf = hf_ids[row_slot[flat]];
  const int at = offset + (int)r->offset;
  const gint len = (gint)r->width;
  if (row_direct[flat])
    return proto_tree_add_item(t, hf, tvb, at, len,
                               r->kind == UETREF_BYTES ? ENC_NA : ENC_BIG_ENDIAN);
  /* The hf is shared by rows with different masks: show this row's bits in the label. */
  const char *pic = bit_picture(pinfo->pool, word, r);
  const char *name = hf_info[row_slot[flat]].hfinfo.name;
  if (r->kind == UETREF_FLAG)
    return proto_tree_add_boolean_format(t, hf, tvb, at, len, value != 0, "%s = %s: %s", pic, name,
                                         value ? "True" : "False");
  if (r->width > 4)
    return proto_tree_add_uint64_format(t, hf, tvb, at, len, value, "%s = %s: 0x%" PRIx64, pic,
                                        name, value);
  if (r->kind == UETREF_SDEC)
    return proto_tree_add_int_format(t, hf, tvb, at, len, (gint32)value, "%s = %s: %" PRId64, pic,
                                     name, (gint64)value);
  return proto_tree_add_uint_format(t, hf, tvb, at, len, (guint32)value, "%s = %s: 0x%" PRIx64, pic,
                                    name, value);
}

gboolean uetref_add_header(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int offset,
                           uetref_hdr hdr, uetref_hdr_vals *out) {
  uetref_hdr_vals local;
  uetref_hdr_vals *hv = out ? out : &local;
  const uetref_header_desc *d = &uetref_headers[hdr];
  const int fam = hdr_family[hdr];
  hv->hdr = hdr;
  hv->offset = offset;
  hv->tree = NULL;
  hv->item = NULL;
  memset(hv->v, 0, sizeof hv->v);
  memset(hv->items, 0, sizeof hv->items);

  gint captured = tvb_captured_length_remaining(tvb, offset);
  gint reported = tvb_reported_length_remaining(tvb, offset);
  if (captured < 0) captured = 0;
  if (reported < 0) reported = 0;
  if ((guint)captured < d->size) {
    proto_item *ti = NULL;
    proto_tree_add_subtree_format(tree, tvb, offset, captured, ett_hdr[hdr], &ti,
                                  "%s [truncated: %d of %u bytes]", d->title,
                                  (guint)reported < d->size ? reported : captured, d->size);
    if ((guint)reported >= d->size)
      expert_add_info_format(pinfo, ti, &ei_snaplen[fam], "%s: only %d of %u bytes captured",
                             d->title, captured, d->size);
    else
      expert_add_info_format(pinfo, ti, &ei_truncated[fam], "%s truncated: %d of %u bytes (%s)",
                             d->title, reported, d->size, d->section);
    return FALSE;
  }

  guint64 words[UETREF_MAX_ROWS];
  for (guint i = 0; i < d->n_rows; i++) {
    const uetref_row *r = &d->rows[i];
    words[i] = is_integer_row(r) ? row_word(tvb, offset, r) : 0;
    hv->v[i] = is_integer_row(r) ? row_value(words[i], r) : 0;
  }

  proto_item *hi =
      proto_tree_add_none_format(tree, hf_prefix_ids[hdr_prefix_slot[hdr]], tvb, offset,
                                 (gint)d->size, "%s (%s)", d->title, d->section);
  hv->item = hi;
  hv->tree = proto_item_add_subtree(hi, ett_hdr[hdr]);

  for (guint i = 0; i < d->n_rows; i++) {
    const guint flat = first_row[hdr] + i;
    const uetref_row *r = &d->rows[i];
    if (row_cond[flat] >= 0 && hv->v[row_cond[flat]] != row_cond_value[flat]) continue;
    proto_item *it = add_row(hv->tree, pinfo, tvb, offset, flat, r, words[i], hv->v[i]);
    hv->items[i] = it;
    if ((r->kind == UETREF_RSVD || row_rsvd_overlay[flat]) && hv->v[i] != 0)
      expert_add_info_format(pinfo, it, &ei_reserved[fam],
                             "Reserved field %s.%s is 0x%" PRIx64 ", must be 0 (%s)", d->prefix,
                             r->name, hv->v[i], d->section);
  }
  return TRUE;
}
