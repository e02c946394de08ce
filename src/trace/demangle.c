/* demangle.c: a small Itanium C++ ABI demangler for kernel names.
 *
 * CUPTI reports kernel names mangled ("_ZN2at6native…"); PyTorch and Nsight
 * show them demangled.  This covers what CUDA kernel names use: nested
 * names and namespaces (anonymous ones included), constructors and
 * destructors, a few operator names, template arguments (types, integer
 * and bool literals, packs), template parameters (T_, T0_), substitutions
 * (S_, S0_, St, Sa, Ss…), builtin, pointer, reference, cv-qualified and
 * array types, and a vendor suffix (" [clone .x]").  Output follows
 * c++filt's spelling ("char const*", "1ul", "> >").  Anything else
 * (local names, lambdas, expressions, function types) makes
 * tbe_demangle return -1 so the caller keeps the mangled name: never a
 * wrong guess.
 *
 * Memory: a fixed arena on the stack, so the function is reentrant and
 * allocates nothing; strings are (offset, length) pairs into it and every
 * concatenation copies, which is fine for names of a few hundred bytes. */
#include <stdio.h>
#include <string.h>

#include "tbexport/analysis.h"

#define ARENA 32768
#define MAXSUB 512
#define MAXTPL 128
#define MAXDEPTH 64

typedef struct sref {
  uint32_t off, len;
} sref;

typedef struct dm {
  const char *p;
  char arena[ARENA];
  size_t alen;
  sref subs[MAXSUB];
  int nsubs;
  sref tpl[MAXTPL];
  int ntpl;
  int err;
  int depth;
} dm;

static const sref NOSTR = {0, 0};

static sref put(dm *d, const char *s, size_t n) {
  if (d->err || d->alen + n > ARENA) {
    d->err = 1;
    return NOSTR;
  }
  sref r = {(uint32_t)d->alen, (uint32_t)n};
  memcpy(d->arena + d->alen, s, n);
  d->alen += n;
  return r;
}

static sref lit(dm *d, const char *s) { return put(d, s, strlen(s)); }

/* a + mid + b, as a new string. */
static sref join(dm *d, sref a, const char *mid, sref b) {
  size_t m = strlen(mid);
  if (d->err || d->alen + a.len + m + b.len > ARENA) {
    d->err = 1;
    return NOSTR;
  }
  sref r = {(uint32_t)d->alen, a.len + (uint32_t)m + b.len};
  memmove(d->arena + d->alen, d->arena + a.off, a.len);
  memcpy(d->arena + d->alen + a.len, mid, m);
  memmove(d->arena + d->alen + a.len + m, d->arena + b.off, b.len);
  d->alen += r.len;
  return r;
}

static void add_sub(dm *d, sref s) {
  if (d->nsubs >= MAXSUB) {
    d->err = 1;
    return;
  }
  d->subs[d->nsubs++] = s;
}

static int peek(dm *d) { return (unsigned char)*d->p; }

static int eat(dm *d, char c) {
  if (*d->p == c) {
    d->p++;
    return 1;
  }
  return 0;
}

static int number(dm *d, long *out) {
  int neg = eat(d, 'n');
  if (*d->p < '0' || *d->p > '9') return 0;
  long v = 0;
  while (*d->p >= '0' && *d->p <= '9') {
    if (v > 100000000) return 0;
    v = v * 10 + (*d->p++ - '0');
  }
  *out = neg ? -v : v;
  return 1;
}

/* <seq-id> _: base-36 digits and upper-case letters; "S_" is 0, "S0_" 1. */
static int seq_id(dm *d, long *out) {
  if (eat(d, '_')) {
    *out = 0;
    return 1;
  }
  long v = 0;
  while (*d->p != '_') {
    char c = *d->p;
    int x;
    if (c >= '0' && c <= '9') x = c - '0';
    else if (c >= 'A' && c <= 'Z') x = c - 'A' + 10;
    else return 0;
    v = v * 36 + x;
    if (v > MAXSUB) return 0;
    d->p++;
  }
  d->p++;
  *out = v + 1;
  return 1;
}

static sref type(dm *d);
static sref name(dm *d, int top, int *is_template, int *cv_const);

static sref source_name(dm *d) {
  long n;
  if (!number(d, &n) || n <= 0 || (long)strlen(d->p) < n) {
    d->err = 1;
    return NOSTR;
  }
  const char *s = d->p;
  d->p += n;
  if (n >= 10 && strncmp(s, "_GLOBAL__N", 10) == 0) return lit(d, "(anonymous namespace)");
  return put(d, s, (size_t)n);
}

static const struct {
  const char *code, *name;
} ops[] = {
    {"cl", "operator()"}, {"ix", "operator[]"}, {"pl", "operator+"},  {"mi", "operator-"},
    {"ml", "operator*"},  {"dv", "operator/"},  {"eq", "operator=="}, {"ne", "operator!="},
    {"lt", "operator<"},  {"gt", "operator>"},  {"le", "operator<="}, {"ge", "operator>="},
    {"aS", "operator="},  {"pL", "operator+="}, {"mI", "operator-="}, {"nt", "operator!"},
};

/* The last plain component of a name, for constructor names. */
static sref last_component(dm *d, sref full) {
  const char *s = d->arena + full.off;
  uint32_t start = 0;
  int depth = 0;
  for (uint32_t i = 0; i < full.len; i++) {
    if (s[i] == '<') depth++;
    else if (s[i] == '>') depth--;
    else if (depth == 0 && s[i] == ':' && i + 1 < full.len && s[i + 1] == ':') start = i + 2;
  }
  uint32_t end = full.len;
  for (uint32_t i = start; i < full.len; i++)
    if (s[i] == '<') {
      end = i;
      break;
    }
  sref r = {full.off + start, end - start};
  return r;
}

static sref unqualified(dm *d, sref prefix) {
  int c = peek(d);
  if (c >= '0' && c <= '9') return source_name(d);
  if (c == 'C' && (d->p[1] >= '1' && d->p[1] <= '3')) {
    d->p += 2;
    return last_component(d, prefix);
  }
  if (c == 'D' && (d->p[1] >= '0' && d->p[1] <= '2')) {
    d->p += 2;
    return join(d, NOSTR, "~", last_component(d, prefix));
  }
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strncmp(d->p, ops[i].code, 2) == 0) {
      d->p += 2;
      return lit(d, ops[i].name);
    }
  d->err = 1;
  return NOSTR;
}

/* Appends '>' with c++filt's "> >" spacing. */
static sref close_angle(dm *d, sref s) {
  if (s.len && d->arena[s.off + s.len - 1] == '>') return join(d, s, " >", NOSTR);
  return join(d, s, ">", NOSTR);
}

static sref literal(dm *d) {
  /* After 'L'. */
  if (d->p[0] == '_' && d->p[1] == 'Z') {
    d->err = 1;
    return NOSTR;
  }
  char code = *d->p;
  const char *suffix = NULL;
  switch (code) {
    case 'i': suffix = ""; break;
    case 'j': suffix = "u"; break;
    case 'l': suffix = "l"; break;
    case 'm': suffix = "ul"; break;
    case 'x': suffix = "ll"; break;
    case 'y': suffix = "ull"; break;
    case 'b': {
      d->p++;
      sref r;
      if (eat(d, '0')) r = lit(d, "false");
      else if (eat(d, '1')) r = lit(d, "true");
      else {
        d->err = 1;
        return NOSTR;
      }
      if (!eat(d, 'E')) d->err = 1;
      return r;
    }
    default: break;
  }
  char buf[64];
  if (suffix) {
    d->p++;
    long v;
    if (!number(d, &v) || !eat(d, 'E')) {
      d->err = 1;
      return NOSTR;
    }
    snprintf(buf, sizeof buf, "%ld%s", v, suffix);
    return lit(d, buf);
  }
  /* Other literal types: "(type)value". */
  sref t = type(d);
  long v;
  if (d->err || !number(d, &v) || !eat(d, 'E')) {
    d->err = 1;
    return NOSTR;
  }
  snprintf(buf, sizeof buf, "%ld", v);
  return join(d, join(d, lit(d, "("), "", t), ")", lit(d, buf));
}

static sref template_arg(dm *d);

/* I <template-arg>+ E  ->  "<a, b>".  With `save`, records the arguments
 * as the template parameters T_, T0_, …. */
static sref template_args(dm *d, int save) {
  if (!eat(d, 'I')) {
    d->err = 1;
    return NOSTR;
  }
  sref out = lit(d, "<");
  int n = 0, first = 1;
  sref saved[MAXTPL];
  while (!d->err && !eat(d, 'E')) {
    if (!*d->p) {
      d->err = 1;
      break;
    }
    sref a = template_arg(d);
    if (n < MAXTPL) saved[n] = a;
    n++;
    out = join(d, out, first ? "" : ", ", a);
    first = 0;
  }
  if (save && !d->err) {
    d->ntpl = n < MAXTPL ? n : MAXTPL;
    memcpy(d->tpl, saved, (size_t)d->ntpl * sizeof(sref));
  }
  return close_angle(d, out);
}

static sref template_arg(dm *d) {
  if (eat(d, 'L')) return literal(d);
  if (eat(d, 'J')) { /* argument pack */
    sref out = NOSTR;
    int first = 1;
    while (!d->err && !eat(d, 'E')) {
      if (!*d->p) {
        d->err = 1;
        break;
      }
      sref a = template_arg(d);
      out = join(d, out, first ? "" : ", ", a);
      first = 0;
    }
    return out;
  }
  if (peek(d) == 'X') {
    d->err = 1;
    return NOSTR;
  }
  return type(d);
}

static sref substitution(dm *d) {
  /* After 'S'. */
  static const struct {
    char c;
    const char *s;
  } abbr[] = {{'t', "std"},
              {'a', "std::allocator"},
              {'b', "std::basic_string"},
              {'s', "std::string"},
              {'i', "std::istream"},
              {'o', "std::ostream"},
              {'d', "std::iostream"}};
  for (size_t i = 0; i < sizeof abbr / sizeof abbr[0]; i++)
    if (*d->p == abbr[i].c) {
      d->p++;
      return lit(d, abbr[i].s);
    }
  long id;
  if (!seq_id(d, &id) || id >= d->nsubs) {
    d->err = 1;
    return NOSTR;
  }
  return d->subs[id];
}

static sref template_param(dm *d) {
  /* After 'T'. */
  long id;
  if (!seq_id(d, &id) || id >= d->ntpl) {
    d->err = 1;
    return NOSTR;
  }
  return d->tpl[id];
}

static const char *builtin(dm *d) {
  static const char *one[26] = {
      ['a' - 'a'] = "signed char", ['b' - 'a'] = "bool",   ['c' - 'a'] = "char",
      ['d' - 'a'] = "double",      ['e' - 'a'] = "long double", ['f' - 'a'] = "float",
      ['g' - 'a'] = "__float128",  ['h' - 'a'] = "unsigned char", ['i' - 'a'] = "int",
      ['j' - 'a'] = "unsigned int", ['l' - 'a'] = "long", ['m' - 'a'] = "unsigned long",
      ['n' - 'a'] = "__int128",    ['o' - 'a'] = "unsigned __int128", ['s' - 'a'] = "short",
      ['t' - 'a'] = "unsigned short", ['v' - 'a'] = "void", ['w' - 'a'] = "wchar_t",
      ['x' - 'a'] = "long long",   ['y' - 'a'] = "unsigned long long", ['z' - 'a'] = "...",
  };
  char c = *d->p;
  if (c >= 'a' && c <= 'z' && one[c - 'a']) {
    d->p++;
    return one[c - 'a'];
  }
  if (c == 'D') {
    static const struct {
      const char *code, *name;
    } two[] = {{"Dh", "half"},     {"Dn", "decltype(nullptr)"}, {"Du", "char8_t"},
               {"Ds", "char16_t"}, {"Di", "char32_t"},          {"Da", "auto"},
               {"DF16_", "_Float16"}, {"DF16b", "std::bfloat16_t"}};
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
      size_t n = strlen(two[i].code);
      if (strncmp(d->p, two[i].code, n) == 0) {
        d->p += n;
        return two[i].name;
      }
    }
  }
  return NULL;
}

static sref type(dm *d) {
  if (++d->depth > MAXDEPTH) {
    d->err = 1;
    return NOSTR;
  }
  sref r = NOSTR;
  const char *b = builtin(d);
  if (b) {
    r = lit(d, b);
    d->depth--;
    return r;
  }
  int c = peek(d);
  switch (c) {
    case 'K':
    case 'V':
    case 'r': {
      d->p++;
      sref inner = type(d);
      r = join(d, inner, c == 'K' ? " const" : c == 'V' ? " volatile" : " restrict", NOSTR);
      add_sub(d, r);
      break;
    }
    case 'P':
    case 'R':
    case 'O': {
      d->p++;
      sref inner = type(d);
      r = join(d, inner, c == 'P' ? "*" : c == 'R' ? "&" : "&&", NOSTR);
      add_sub(d, r);
      break;
    }
    case 'A': { /* A <number> _ <type> */
      d->p++;
      long n;
      if (!number(d, &n) || !eat(d, '_')) {
        d->err = 1;
        break;
      }
      sref inner = type(d);
      char buf[32];
      snprintf(buf, sizeof buf, " [%ld]", n);
      r = join(d, inner, buf, NOSTR);
      add_sub(d, r);
      break;
    }
    case 'T': {
      d->p++;
      r = template_param(d);
      add_sub(d, r);
      if (peek(d) == 'I') {
        r = join(d, r, "", template_args(d, 0));
        add_sub(d, r);
      }
      break;
    }
    case 'S': {
      if (d->p[1] == 't') {
        /* std:: unscoped name: a class type. */
        int tmpl = 0, cv = 0;
        r = name(d, 0, &tmpl, &cv);
        add_sub(d, r);
        break;
      }
      d->p++;
      r = substitution(d);
      if (peek(d) == 'I') {
        r = join(d, r, "", template_args(d, 0));
        add_sub(d, r);
      }
      break;
    }
    case 'D':
      if (d->p[1] == 'p') { /* pack expansion */
        d->p += 2;
        r = type(d);
        add_sub(d, r);
        break;
      }
      d->err = 1;
      break;
    case 'N':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9': {
      int tmpl = 0, cv = 0;
      r = name(d, 0, &tmpl, &cv);
      add_sub(d, r);
      break;
    }
    default: d->err = 1; break;
  }
  d->depth--;
  return r;
}

/* <name>: nested or unscoped, optionally with template arguments.  With
 * `top`, the outermost template arguments become the template params. */
static sref name(dm *d, int top, int *is_template, int *cv_const) {
  *is_template = 0;
  if (++d->depth > MAXDEPTH) {
    d->err = 1;
    return NOSTR;
  }
  sref r = NOSTR;
  if (eat(d, 'N')) {
    while (peek(d) == 'K' || peek(d) == 'V' || peek(d) == 'r') {
      if (peek(d) == 'K') *cv_const = 1;
      d->p++;
    }
    eat(d, 'R');
    eat(d, 'O');
    int have = 0;
    while (!d->err && !eat(d, 'E')) {
      int c = peek(d);
      if (!c) {
        d->err = 1;
        break;
      }
      if (c == 'I') {
        if (!have) {
          d->err = 1;
          break;
        }
        sref args = template_args(d, top);
        r = join(d, r, "", args);
        *is_template = 1;
      } else if (c == 'S') {
        d->p++;
        sref s = substitution(d);
        r = have ? join(d, r, "::", s) : s;
        *is_template = 0;
        have = 1;
        continue; /* a substitution is not added again */
      } else if (c == 'T') {
        d->p++;
        sref s = template_param(d);
        r = have ? join(d, r, "::", s) : s;
        *is_template = 0;
      } else {
        sref u = unqualified(d, r);
        r = have ? join(d, r, "::", u) : u;
        *is_template = 0;
      }
      have = 1;
      if (peek(d) != 'E') add_sub(d, r);
    }
  } else if (peek(d) == 'S' && d->p[1] == 't') {
    d->p += 2;
    sref u = unqualified(d, NOSTR);
    r = join(d, lit(d, "std"), "::", u);
    if (peek(d) == 'I') {
      add_sub(d, r);
      r = join(d, r, "", template_args(d, top));
      *is_template = 1;
    }
  } else if (peek(d) == 'S') {
    d->p++;
    r = substitution(d);
    if (peek(d) != 'I') d->err = 1; /* a plain substitution is not a <name> */
    else {
      r = join(d, r, "", template_args(d, top));
      *is_template = 1;
    }
  } else if (peek(d) >= '0' && peek(d) <= '9') {
    r = unqualified(d, NOSTR);
    if (peek(d) == 'I') {
      add_sub(d, r);
      r = join(d, r, "", template_args(d, top));
      *is_template = 1;
    }
  } else {
    d->err = 1;
  }
  d->depth--;
  return r;
}

static int is_type_end(dm *d) { return *d->p == '\0' || *d->p == '.' || *d->p == 'E'; }

int tbe_demangle(const char *mangled, char *buf, size_t size) {
  if (!buf || size == 0) return -1;
  buf[0] = '\0';
  if (!mangled) return -1;
  dm *d = NULL;
  dm storage; /* large, but on the stack: reentrant and allocation-free */
  d = &storage;
  d->p = mangled;
  d->alen = 0;
  d->nsubs = 0;
  d->ntpl = 0;
  d->err = 0;
  d->depth = 0;
  sref out = NOSTR;
  if (strncmp(mangled, "_Z", 2) != 0) goto fail;
  d->p += 2;
  int tmpl = 0, cv = 0;
  sref nm = name(d, 1, &tmpl, &cv);
  if (d->err) goto fail;
  if (is_type_end(d)) {
    out = nm; /* a data name */
  } else {
    sref ret = NOSTR;
    int have_ret = 0;
    if (tmpl) {
      ret = type(d);
      have_ret = 1;
    }
    sref params = NOSTR;
    int n = 0;
    while (!d->err && !is_type_end(d)) {
      sref t = type(d);
      if (n == 0 && d->alen >= t.len && t.len == 4 && memcmp(d->arena + t.off, "void", 4) == 0 &&
          is_type_end(d)) {
        n = 1;
        break; /* (void) is written () */
      }
      params = join(d, params, n ? ", " : "", t);
      n++;
    }
    if (d->err || n == 0) goto fail;
    out = join(d, nm, "(", params);
    out = join(d, out, cv ? ") const" : ")", NOSTR);
    if (have_ret) out = join(d, ret, " ", out);
  }
  if (*d->p == '.') {
    out = join(d, out, " [clone ", lit(d, d->p));
    out = join(d, out, "]", NOSTR);
    d->p += strlen(d->p);
  }
  if (d->err || *d->p != '\0') goto fail;
  if (out.len + 1 > size) {
    memcpy(buf, d->arena + out.off, size - 1);
    buf[size - 1] = '\0';
    return (int)(size - 1);
  }
  memcpy(buf, d->arena + out.off, out.len);
  buf[out.len] = '\0';
  return (int)out.len;
fail:
  snprintf(buf, size, "%s", mangled);
  return -1;
}
