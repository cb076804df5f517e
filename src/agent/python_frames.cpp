// Every thread's Python traceback read from CPython's own structures, in every job process
// (LD_PRELOAD), for the interpreters that export no traceback dumper: 3.9 and 3.10 (their layouts,
// known per version) and 3.13+ (the layout the interpreter describes in _PyRuntime.debug_offsets).
// The layout is found at start-up; the walk runs in the crash and stack-dump handlers.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "agent/crash.h"
#include "common/write_all.h"

namespace traindoc::agent {
namespace {

// As faulthandler: beyond these, "..." (and a cycle in a corrupt list ends there too).
constexpr int kMaxThreads = 100;
constexpr int kMaxDepth = 100;
constexpr int kMaxInterpreters = 16;
constexpr int64_t kMaxString = 500;
// A code object's line table is far smaller; a larger size is a torn object.
constexpr int64_t kMaxLineTable = 1 << 20;

enum class FrameKind : uint8_t {
  kFrameObject,       // 3.9, 3.10: PyFrameObject, f_lasti an int
  kInterpreterFrame,  // 3.11+: _PyInterpreterFrame, instr_ptr a pointer into the code
};

enum class LineTable : uint8_t {
  kLnotab,     // 3.9: (byte delta, line delta) pairs, byte offsets
  kPairs,      // 3.10: the same pairs with -128 for "no line", byte offsets of code units
  kLocations,  // 3.11+: PEP 657 location entries, in code units
};

// Offsets of what the walk reads, each from the start of its object.
struct Layout {
  FrameKind frame_kind;
  LineTable line_table;
  uint64_t runtime_interpreters;  // _PyRuntime.interpreters.head
  uint64_t interp_next;
  uint64_t interp_threads;
  uint64_t thread_next;
  uint64_t thread_frame;
  uint64_t thread_id;  // pthread_t, as faulthandler prints it
  uint64_t frame_back;
  uint64_t frame_code;
  uint64_t frame_position;  // f_lasti or instr_ptr
  uint64_t code_filename;
  uint64_t code_name;
  uint64_t code_firstlineno;
  uint64_t code_lines;
  uint64_t code_units;  // co_code_adaptive (3.11+)
  uint64_t object_type;
  uint64_t bytes_size;
  uint64_t bytes_data;
  uint64_t str_state;
  uint64_t str_length;
  uint64_t str_ascii_data;    // sizeof(PyASCIIObject)
  uint64_t str_compact_data;  // sizeof(PyCompactUnicodeObject)
};

// From the headers of CPython 3.9 and 3.10 (release builds, LP64): not patch-dependent. The sizes
// of their code and frame objects are checked at start-up, so that another build (a debug build,
// a vendor's patch) gets no traceback rather than a wrong one.
constexpr Layout kLayout39 = {.frame_kind = FrameKind::kFrameObject,
                              .line_table = LineTable::kLnotab,
                              .runtime_interpreters = 32,
                              .interp_next = 0,
                              .interp_threads = 8,
                              .thread_next = 8,
                              .thread_frame = 24,
                              .thread_id = 176,
                              .frame_back = 24,
                              .frame_code = 32,
                              .frame_position = 104,
                              .code_filename = 104,
                              .code_name = 112,
                              .code_firstlineno = 40,
                              .code_lines = 120,
                              .code_units = 0,
                              .object_type = 8,
                              .bytes_size = 16,
                              .bytes_data = 32,
                              .str_state = 32,
                              .str_length = 16,
                              .str_ascii_data = 48,
                              .str_compact_data = 72};
// 3.10 moved f_lasti (now counting code units) and changed the line table's format.
constexpr Layout layout_310() {
  Layout l = kLayout39;
  l.line_table = LineTable::kPairs;
  l.frame_position = 96;
  return l;
}
constexpr Layout kLayout310 = layout_310();
constexpr int64_t kCodeSize39 = 176;
constexpr int64_t kFrameSize39 = 368;
constexpr int64_t kFrameSize310 = 360;
constexpr uint64_t kTypeBasicSize = 32;  // PyTypeObject.tp_basicsize, 3.9 and 3.10

// _Py_DebugOffsets, the part that the walk uses (its layout changes with each minor version; the
// offsets it holds are those of the running build). Each group starts with its struct's size.
struct RuntimeOffsets {
  uint64_t size, finalizing, interpreters_head;
};
struct ThreadOffsets {
  uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
      status;
};
struct ObjectOffsets {
  uint64_t size, ob_type;
};
struct BytesOffsets {
  uint64_t size, ob_size, ob_sval;
};
struct StrOffsets {
  uint64_t size, state, length, asciiobject_size;
};

struct DebugOffsets313 {
  char cookie[8];
  uint64_t version, free_threaded;
  RuntimeOffsets runtime;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_enabled, gil_locked, gil_holder;
  } interp;
  ThreadOffsets thread;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code;
  ObjectOffsets object;
  uint64_t type_tuple_list_dict_float_long[18];
  BytesOffsets bytes;
  StrOffsets str;
};

// 3.14 added the main thread, code-object generations and thread-local bytecode (free-threaded
// builds), the stack pointer, and set objects before dicts.
struct DebugOffsets314 {
  char cookie[8];
  uint64_t version, free_threaded;
  RuntimeOffsets runtime;
  struct {
    uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins,
        ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder, code_object_generation,
        tlbc_generation;
  } interp;
  ThreadOffsets thread;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index;
  } frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive, co_tlbc;
  } code;
  ObjectOffsets object;
  uint64_t type_tuple_list_set_dict_float_long[22];
  BytesOffsets bytes;
  StrOffsets str;
};

// A compact string's data follows PyCompactUnicodeObject's utf8_length and utf8 (3.12+).
constexpr uint64_t kCompactExtra = 16;

Layout g_layout{};
bool g_ready = false;
uint64_t g_runtime = 0;
uint64_t g_code_type = 0;
uint64_t g_str_type = 0;
uint64_t g_bytes_type = 0;

// Reads our own memory through the kernel, which refuses an unmapped or torn address with EFAULT
// rather than a fault: a corrupt heap ends the walk early, never in a second crash.
// Async-signal-safe.
bool peek(uint64_t address, void* out, size_t size) {
  if (address == 0) return false;
  iovec local{out, size};
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an address the kernel checks, never dereferenced
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

// Async-signal-safe.
template <typename T>
bool peek_value(uint64_t address, T& out) {
  return peek(address, &out, sizeof(out));
}

// Async-signal-safe.
bool has_type(uint64_t object, uint64_t type) {
  uint64_t actual = 0;
  return peek_value(object + g_layout.object_type, actual) && actual == type;
}

// Writes through a small buffer on the handler's stack. Async-signal-safe.
class Writer {
 public:
  explicit Writer(int fd) : m_fd(fd) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() { flush(); }

  void put(char c) {
    if (m_size == sizeof(m_buffer)) flush();
    m_buffer[m_size++] = c;
  }
  void put(const char* text) {
    while (*text != '\0') put(*text++);
  }
  void put_decimal(uint64_t value) {
    char digits[24];
    size_t n = format_decimal(digits, value);
    for (size_t i = 0; i < n; ++i) put(digits[i]);
  }
  void put_hex(uint64_t value, int width) {
    for (int shift = (width - 1) * 4; shift >= 0; shift -= 4) {
      put("0123456789abcdef"[(value >> shift) & 0xf]);
    }
  }
  void flush() {
    common::write_all(m_fd, m_buffer, m_size);
    m_size = 0;
  }

 private:
  int m_fd;
  size_t m_size = 0;
  char m_buffer[512];
};

// Bytes of our memory read in chunks. Async-signal-safe.
class ByteReader {
 public:
  ByteReader(uint64_t at, uint64_t end) : m_at(at), m_end(end) {}

  bool next(uint8_t& out) {
    if (m_pos == m_have) {
      if (m_at >= m_end) return false;
      size_t want = m_end - m_at < sizeof(m_chunk) ? m_end - m_at : sizeof(m_chunk);
      if (!peek(m_at, m_chunk, want)) return false;
      m_at += want;
      m_have = want;
      m_pos = 0;
    }
    out = m_chunk[m_pos++];
    return true;
  }
  // A location table's varint: 6 bits a byte, least significant first, 0x40 while more follow.
  uint32_t varint() {
    uint32_t value = 0;
    uint8_t byte = 0;
    for (int shift = 0; shift < 32 && next(byte); shift += 6) {
      value |= static_cast<uint32_t>(byte & 63) << shift;
      if ((byte & 64) == 0) break;
    }
    return value;
  }
  int32_t signed_varint() {
    uint32_t value = varint();
    return (value & 1) != 0 ? -static_cast<int32_t>(value >> 1) : static_cast<int32_t>(value >> 1);
  }
  void skip(int count) {
    uint8_t ignored = 0;
    for (int i = 0; i < count; ++i) next(ignored);
  }

 private:
  uint64_t m_at;
  uint64_t m_end;
  size_t m_have = 0;
  size_t m_pos = 0;
  uint8_t m_chunk[256];
};

// The line of byte offset `offset` in a 3.9 co_lnotab (PyCode_Addr2Line). Async-signal-safe.
int lnotab_line(ByteReader& table, int line, int64_t offset) {
  int64_t address = 0;
  uint8_t delta = 0;
  uint8_t line_delta = 0;
  while (table.next(delta) && table.next(line_delta)) {
    address += delta;
    if (address > offset) break;
    line += static_cast<int8_t>(line_delta);
  }
  return line;
}

// The line of byte offset `offset` in a 3.10 co_linetable: ranges of code with a line delta each,
// -128 for code without a line. Async-signal-safe.
int pairs_line(ByteReader& table, int line, int64_t offset) {
  if (offset < 0) return line;  // not started
  int64_t start = 0;
  uint8_t length = 0;
  uint8_t line_delta = 0;
  while (table.next(length) && table.next(line_delta)) {
    int range_line = -1;
    if (static_cast<int8_t>(line_delta) != -128) {
      line += static_cast<int8_t>(line_delta);
      range_line = line;
    }
    if (offset < start + length) return range_line;
    start += length;
  }
  return -1;
}

// The line of code unit `unit` in a 3.11+ location table (Objects/locations.md): each entry
// covers 1 to 8 code units, its kind in bits 3-6 of its first byte. Async-signal-safe.
int locations_line(ByteReader& table, int line, int64_t unit) {
  if (unit < 0) return line;
  int64_t start = 0;
  uint8_t head = 0;
  while (table.next(head)) {
    if ((head & 0x80) == 0) return -1;  // not an entry's first byte: a torn table
    int kind = (head >> 3) & 15;
    bool no_line = false;
    switch (kind) {
      case 15:  // no location
        no_line = true;
        break;
      case 14:  // long form: line delta, end line delta, column, end column
        line += table.signed_varint();
        table.varint();
        table.varint();
        table.varint();
        break;
      case 13:  // line delta, no column
        line += table.signed_varint();
        break;
      case 10:
      case 11:
      case 12:  // one line, 0 to 2 below, two bytes of columns
        line += kind - 10;
        table.skip(2);
        break;
      default:  // short form: same line, one byte of columns
        table.skip(1);
        break;
    }
    start += (head & 7) + 1;
    if (unit < start) return no_line ? -1 : line;
  }
  return -1;
}

// Async-signal-safe.
int frame_line(uint64_t frame, uint64_t code) {
  const Layout& l = g_layout;
  int32_t first = 0;
  uint64_t table = 0;
  int64_t table_size = 0;
  if (!peek_value(code + l.code_firstlineno, first) || !peek_value(code + l.code_lines, table) ||
      !has_type(table, g_bytes_type) || !peek_value(table + l.bytes_size, table_size) ||
      table_size < 0 || table_size > kMaxLineTable) {
    return -1;
  }
  ByteReader reader(table + l.bytes_data, table + l.bytes_data + static_cast<uint64_t>(table_size));
  if (l.frame_kind == FrameKind::kFrameObject) {
    int32_t lasti = 0;
    if (!peek_value(frame + l.frame_position, lasti)) return -1;
    if (l.line_table == LineTable::kLnotab) return lnotab_line(reader, first, lasti);
    return pairs_line(reader, first, static_cast<int64_t>(lasti) * 2);
  }
  uint64_t instr = 0;
  if (!peek_value(frame + l.frame_position, instr)) return -1;
  uint64_t units = code + l.code_units;
  if (instr < units) return -1;
  return locations_line(reader, first, static_cast<int64_t>((instr - units) / 2));
}

// A str object as faulthandler writes it: printable ASCII as is, other characters escaped, at
// most kMaxString characters. Async-signal-safe.
void put_str(Writer& out, uint64_t object, bool quoted) {
  const Layout& l = g_layout;
  uint32_t state = 0;
  int64_t length = 0;
  if (!has_type(object, g_str_type) || !peek_value(object + l.str_state, state) ||
      !peek_value(object + l.str_length, length) || length < 0) {
    out.put("???");
    return;
  }
  // interned:2, kind:3, compact:1, ascii:1 (3.9-3.14 builds with a GIL).
  uint32_t kind = (state >> 2) & 7;
  bool compact = ((state >> 5) & 1) != 0;
  bool ascii = ((state >> 6) & 1) != 0;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) {
    out.put("???");
    return;
  }
  uint64_t data = object + (ascii ? l.str_ascii_data : l.str_compact_data);
  if (quoted) out.put('"');
  ByteReader reader(data,
                    data + static_cast<uint64_t>(length < kMaxString ? length : kMaxString) * kind);
  for (int64_t i = 0; i < length && i < kMaxString; ++i) {
    uint32_t c = 0;
    for (uint32_t b = 0; b < kind; ++b) {
      uint8_t byte = 0;
      if (!reader.next(byte)) {
        out.put("???");
        return;
      }
      c |= static_cast<uint32_t>(byte) << (8 * b);
    }
    if (c >= ' ' && c <= '~') {
      out.put(static_cast<char>(c));
    } else if (c <= 0xff) {
      out.put("\\x");
      out.put_hex(c, 2);
    } else if (c <= 0xffff) {
      out.put("\\u");
      out.put_hex(c, 4);
    } else {
      out.put("\\U");
      out.put_hex(c, 8);
    }
  }
  if (length > kMaxString) out.put("...");
  if (quoted) out.put('"');
}

// `  File "x.py", line 12 in f`, as CPython's dumper writes a frame. Async-signal-safe.
void put_frame(Writer& out, uint64_t frame, uint64_t code) {
  // An unreadable pointer stays 0, which put_str() writes as "???".
  uint64_t filename = 0;
  uint64_t name = 0;
  peek_value(code + g_layout.code_filename, filename);
  peek_value(code + g_layout.code_name, name);
  out.put("  File ");
  put_str(out, filename, true);
  out.put(", line ");
  int line = frame_line(frame, code);
  if (line >= 0) {
    out.put_decimal(static_cast<uint64_t>(line));
  } else {
    out.put("???");
  }
  out.put(" in ");
  put_str(out, name, false);
  out.put('\n');
}

// Async-signal-safe.
void put_thread_frames(Writer& out, uint64_t thread) {
  const Layout& l = g_layout;
  uint64_t frame = 0;
  if (!peek_value(thread + l.thread_frame, frame) || frame == 0) {
    out.put("  <no Python frame>\n");
    return;
  }
  int depth = 0;
  // 3.11+ threads hold shim frames (entry frames of C calls) between the Python ones: they count
  // towards the bound on steps, so that a cycle of them ends too.
  for (int steps = 0; frame != 0 && steps < 2 * kMaxDepth; ++steps) {
    if (depth == kMaxDepth) {
      out.put("  ...\n");
      return;
    }
    uint64_t code = 0;
    if (!peek_value(frame + l.frame_code, code)) {
      out.put("  <unreadable frame>\n");
      return;
    }
    // 3.14's f_executable is a tagged reference: its low bits are flags.
    if (l.frame_kind == FrameKind::kInterpreterFrame) code &= ~uint64_t{7};
    if (has_type(code, g_code_type)) {
      put_frame(out, frame, code);
      ++depth;
    } else if (l.frame_kind == FrameKind::kFrameObject) {
      out.put("  File ???, line ??? in ???\n");
      ++depth;
    }
    if (!peek_value(frame + l.frame_back, frame)) return;
  }
}

// Reads the layout that the interpreter describes; false for a build that the walk cannot read.
template <typename Offsets>
bool layout_from_debug_offsets(const Offsets& d, Layout& l) {
  // Free-threaded builds store the string state's bits elsewhere and may run a thread-local
  // copy of the bytecode: not read.
  if (d.free_threaded != 0) return false;
  l.frame_kind = FrameKind::kInterpreterFrame;
  l.line_table = LineTable::kLocations;
  l.runtime_interpreters = d.runtime.interpreters_head;
  l.interp_next = d.interp.next;
  l.interp_threads = d.interp.threads_head;
  l.thread_next = d.thread.next;
  l.thread_frame = d.thread.current_frame;
  l.thread_id = d.thread.thread_id;
  l.frame_back = d.frame.previous;
  l.frame_code = d.frame.executable;
  l.frame_position = d.frame.instr_ptr;
  l.code_filename = d.code.filename;
  l.code_name = d.code.name;
  l.code_firstlineno = d.code.firstlineno;
  l.code_lines = d.code.linetable;
  l.code_units = d.code.co_code_adaptive;
  l.object_type = d.object.ob_type;
  l.bytes_size = d.bytes.ob_size;
  l.bytes_data = d.bytes.ob_sval;
  l.str_state = d.str.state;
  l.str_length = d.str.length;
  l.str_ascii_data = d.str.asciiobject_size;
  l.str_compact_data = d.str.asciiobject_size + kCompactExtra;
  // Each offset lies inside its struct: a layout misread (another version's) fails here.
  auto inside = [](uint64_t size, std::initializer_list<uint64_t> offsets) {
    for (uint64_t offset : offsets) {
      if (offset + sizeof(uint64_t) > size) return false;
    }
    return true;
  };
  return inside(d.runtime.size, {l.runtime_interpreters}) &&
         inside(d.interp.size, {l.interp_next, l.interp_threads}) &&
         inside(d.thread.size, {l.thread_next, l.thread_frame, l.thread_id}) &&
         inside(d.frame.size, {l.frame_back, l.frame_code, l.frame_position}) &&
         inside(d.code.size,
                {l.code_filename, l.code_name, l.code_firstlineno, l.code_lines, l.code_units}) &&
         inside(d.object.size, {l.object_type}) && inside(d.bytes.size, {l.bytes_size}) &&
         inside(d.str.size, {l.str_state, l.str_length}) && l.str_ascii_data < d.str.size;
}

// The minor version of CPython 3 ("3.10.13 (main, ...)"), or -1.
int python_minor() {
  using VersionFn = const char* (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  if (version == nullptr) return -1;
  const char* text = version();
  if (text == nullptr || std::strncmp(text, "3.", 2) != 0) return -1;
  char* end = nullptr;
  long minor = std::strtol(text + 2, &end, 10);
  return end != text + 2 && *end == '.' ? static_cast<int>(minor) : -1;
}

// Whether the interpreter's code and frame objects have the sizes of the build a layout describes.
bool sizes_match(const void* code_type, int64_t code_size, int64_t frame_size) {
  int64_t code = 0;
  int64_t frame = 0;
  void* frame_type = dlsym(RTLD_DEFAULT, "PyFrame_Type");
  if (frame_type == nullptr) return false;
  std::memcpy(&code, static_cast<const char*>(code_type) + kTypeBasicSize, sizeof(code));
  std::memcpy(&frame, static_cast<const char*>(frame_type) + kTypeBasicSize, sizeof(frame));
  return code == code_size && frame == frame_size;
}

bool find_layout(int minor, const char* runtime, const void* code_type, Layout& l) {
  if (minor == 9 || minor == 10) {
    l = minor == 9 ? kLayout39 : kLayout310;
    return sizes_match(code_type, kCodeSize39, minor == 9 ? kFrameSize39 : kFrameSize310);
  }
  // _PyRuntime starts with _Py_DebugOffsets from 3.13 on; static data, valid before start-up.
  if (minor < 13 || std::memcmp(runtime, "xdebugpy", 8) != 0) return false;
  uint64_t version = 0;
  std::memcpy(&version, runtime + 8, sizeof(version));
  if (((version >> 24) & 0xff) != 3 || static_cast<int>((version >> 16) & 0xff) != minor) {
    return false;
  }
  if (minor == 13) {
    DebugOffsets313 d{};
    std::memcpy(&d, runtime, sizeof(d));
    return layout_from_debug_offsets(d, l);
  }
  if (minor == 14) {
    DebugOffsets314 d{};
    std::memcpy(&d, runtime, sizeof(d));
    return layout_from_debug_offsets(d, l);
  }
  return false;  // a later layout, unknown to this build
}

}  // namespace

void prepare_python_frames() {
  const void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  const void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  const void* str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  const void* bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
  if (runtime == nullptr || code_type == nullptr || str_type == nullptr || bytes_type == nullptr) {
    return;
  }
  // Addresses as numbers from here on: the walk only compares them and reads through peek().
  g_runtime = reinterpret_cast<uint64_t>(runtime);
  g_code_type = reinterpret_cast<uint64_t>(code_type);
  g_str_type = reinterpret_cast<uint64_t>(str_type);
  g_bytes_type = reinterpret_cast<uint64_t>(bytes_type);
  g_ready = find_layout(python_minor(), static_cast<const char*>(runtime), code_type, g_layout);
}

// Async-signal-safe.
bool python_frames_readable() {
  return g_ready;
}

// Async-signal-safe.
bool write_python_frames(int fd) {
  if (!g_ready) return false;
  const Layout& l = g_layout;
  Writer out(fd);
  uint64_t interp = 0;
  if (!peek_value(g_runtime + l.runtime_interpreters, interp) || interp == 0) {
    out.put("unable to get the interpreter state\n");
    return false;
  }
  // The crashing thread is the one whose id is ours, as CPython's dumper marks it.
  auto self = static_cast<uint64_t>(pthread_self());
  int threads = 0;
  for (int i = 0; interp != 0 && i < kMaxInterpreters && threads <= kMaxThreads; ++i) {
    uint64_t thread = 0;
    peek_value(interp + l.interp_threads, thread);
    for (; thread != 0; ++threads) {
      if (threads > 0) out.put('\n');
      if (threads == kMaxThreads) {
        out.put("...\n");
        ++threads;
        break;
      }
      uint64_t id = 0;
      peek_value(thread + l.thread_id, id);
      out.put(id == self ? "Current thread 0x" : "Thread 0x");
      out.put_hex(id, 16);
      out.put(" (most recent call first):\n");
      put_thread_frames(out, thread);
      if (!peek_value(thread + l.thread_next, thread)) thread = 0;
    }
    if (!peek_value(interp + l.interp_next, interp)) interp = 0;
  }
  return threads > 0;
}

}  // namespace traindoc::agent
