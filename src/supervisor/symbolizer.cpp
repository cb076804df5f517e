// Symbolizes a crashed process's native frames offline with elfutils libdwfl: one Dwfl per file,
// reported at bias 0 so that a cached file serves every process whatever its load address.
// Supervisor process, any one thread per Symbolizer.
#include "supervisor/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "common/hex.h"
#include "store/symbol_name.h"

namespace traindoc::supervisor {

namespace {

constexpr size_t kMaxCachedFiles = 512;
constexpr size_t kMaxDescribedPerFile = 8192;
constexpr size_t kMaxDiesVisited = 4'000'000;

// ---- names -----------------------------------------------------------------------------------

// A DWARF function's name: its demangled linkage name where there is one (it says the namespace,
// class and parameters), else its plain name qualified by the namespaces and classes around its
// declaration (GCC gives no linkage name to static and inline-only functions).
std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* linkage = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) != nullptr ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) != nullptr) {
    linkage = dwarf_formstring(&attr);
  }
  if (linkage != nullptr) return store::demangle(linkage);
  const char* name = nullptr;
  if (dwarf_attr_integrate(die, DW_AT_name, &attr) != nullptr) name = dwarf_formstring(&attr);
  if (name == nullptr) return {};
  // The declaration: through the inlined copy's origin and an out-of-line definition's
  // specification, a few steps at most (a corrupt file could loop).
  Dwarf_Die decl = *die;
  for (int step = 0; step < 8; ++step) {
    Dwarf_Die next;
    if ((dwarf_attr(&decl, DW_AT_abstract_origin, &attr) == nullptr &&
         dwarf_attr(&decl, DW_AT_specification, &attr) == nullptr) ||
        dwarf_formref_die(&attr, &next) == nullptr) {
      break;
    }
    decl = next;
  }
  std::string qualified = name;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(&decl, &scopes);
  for (int i = 1; i < n; ++i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type) {
      continue;
    }
    const char* scope = dwarf_diename(&scopes[i]);
    qualified.insert(0, std::string(scope != nullptr ? scope : "(anonymous namespace)") + "::");
  }
  std::free(scopes);
  return qualified;
}

// Appends, outermost first, the DW_TAG_subprogram and DW_TAG_inlined_subroutine DIEs under
// `parent` whose ranges hold `pc`. Not dwarf_getscopes: it looks for each inlined function's
// abstract origin within the same CU, so it finds no scopes at all (and leaks) when the origin
// lives in another CU, as LTO builds do. `budget` bounds the DIEs a corrupt file can make us read.
bool function_scopes(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>& out, int depth,
                     size_t& budget) {
  Dwarf_Die child;
  if (depth > 64 || dwarf_child(parent, &child) != 0) return false;
  do {
    if (budget == 0) return false;
    --budget;
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
      case DW_TAG_lexical_block:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
        if (dwarf_haspc(&child, pc) > 0) {
          int tag = dwarf_tag(&child);
          if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) out.push_back(child);
          function_scopes(&child, pc, out, depth + 1, budget);
          return true;
        }
        break;
      // Definitions can sit in a namespace (GCC) or a Fortran module; those of class members
      // sit at CU level with DW_AT_specification (GCC, Clang), so classes are not searched.
      case DW_TAG_namespace:
      case DW_TAG_module:
        if (function_scopes(&child, pc, out, depth + 1, budget)) return true;
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// ---- separate debug files (local only) -------------------------------------------------------

struct DebugSearch {
  const SymbolizerOptions* options = nullptr;
};

bool file_crc_matches(int fd, GElf_Word expected) {
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(1 << 16);
  off_t at = 0;
  while (true) {
    ssize_t n = pread(fd, buffer.data(), buffer.size(), at);
    if (n < 0) return false;
    if (n == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
    at += n;
  }
  return static_cast<GElf_Word>(crc) == expected;
}

enum class Check { kBuildId, kDebuglink, kNone };

// Opens `path` as the debug file of a module with build id `id` (len 0: none) when it is one.
int try_debug_file(const std::string& path, const struct stat* main_stat, const unsigned char* id,
                   int id_len, Check check, GElf_Word crc, char** debuginfo_file_name) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  bool ok =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      !(main_stat != nullptr && st.st_dev == main_stat->st_dev && st.st_ino == main_stat->st_ino);
  if (ok && check != Check::kNone) {
    // -1: not ELF; 0: no build id; 1: same build id; 2: another one.
    int id_match = -1;
    if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
      if (elf_kind(elf) == ELF_K_ELF) {
        const void* candidate_id = nullptr;  // points into elf: compare before elf_end
        ssize_t candidate_len = dwelf_elf_gnu_build_id(elf, &candidate_id);
        if (id_len <= 0 || candidate_len <= 0) {
          id_match = 0;
        } else {
          id_match = candidate_len == id_len &&
                             std::memcmp(candidate_id, id, static_cast<size_t>(id_len)) == 0
                         ? 1
                         : 2;
        }
      }
      elf_end(elf);
    }
    ok =
        id_match == 1 || (id_match == 0 && check == Check::kDebuglink && file_crc_matches(fd, crc));
  }
  if (!ok) {
    close(fd);
    return -1;
  }
  *debuginfo_file_name = strdup(path.c_str());
  return fd;
}

// libdwfl calls this when a file's own DWARF or .symtab is missing, and again (crc 0) for the
// dwz alt file named by .gnu_debugaltlink. dwfl_standard_find_debuginfo would also ask
// debuginfod when DEBUGINFOD_URLS is set (Debian sets it for login shells where gdb is
// installed): a crash report must not download gigabytes or wait on a firewall, so this one
// searches the local file system only.
int find_debuginfo_local(Dwfl_Module* mod, void** userdata, const char* /*modname*/,
                         Dwarf_Addr /*base*/, const char* file_name, const char* debuglink_file,
                         GElf_Word debuglink_crc, char** debuginfo_file_name) {
  const auto* search = userdata != nullptr ? static_cast<const DebugSearch*>(*userdata) : nullptr;
  if (search == nullptr || search->options == nullptr) return -1;
  const std::vector<std::string>& roots = search->options->debug_roots;

  struct stat main_stat {};
  const struct stat* main = nullptr;
  if (file_name != nullptr && stat(file_name, &main_stat) == 0) main = &main_stat;

  const unsigned char* id = nullptr;
  GElf_Addr id_vaddr = 0;
  int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
  if (id_len < 0) id_len = 0;
  bool alt = debuglink_file != nullptr && debuglink_crc == 0;
  if (id_len > 1 && !alt) {
    std::string name = common::hex_bytes(id, 1) + "/" +
                       common::hex_bytes(id + 1, static_cast<size_t>(id_len - 1)) + ".debug";
    for (const std::string& root : roots) {
      std::string path = root;
      path.append("/.build-id/").append(name);
      int fd = try_debug_file(path, main, id, id_len, Check::kBuildId, 0, debuginfo_file_name);
      if (fd >= 0) return fd;
    }
  }
  if (debuglink_file == nullptr || debuglink_file[0] == '\0') return -1;

  std::string link(debuglink_file);
  std::vector<std::string> candidates;
  if (link[0] == '/') candidates.push_back(link);
  auto add_dir = [&](std::string_view file) {
    size_t slash = file.rfind('/');
    if (slash == std::string_view::npos) return;
    std::string dir(file.substr(0, slash));
    if (link[0] != '/') {
      candidates.push_back(dir + "/" + link);
      candidates.push_back(dir + "/.debug/" + link);
      for (const std::string& root : roots) {
        std::string path = root;
        candidates.push_back(path.append(dir).append("/").append(link));
      }
    }
  };
  if (file_name != nullptr) {
    add_dir(file_name);
    if (char* canonical = realpath(file_name, nullptr)) {
      if (std::strcmp(canonical, file_name) != 0) add_dir(canonical);
      std::free(canonical);
    }
  }
  Check check = alt ? Check::kNone : Check::kDebuglink;
  for (const std::string& candidate : candidates) {
    int fd = try_debug_file(candidate, main, alt ? nullptr : id, alt ? 0 : id_len, check,
                            debuglink_crc, debuginfo_file_name);
    if (fd >= 0) return fd;
  }
  return -1;
}

// Every file is reported with its path, so libdwfl never has to find a main ELF itself (the
// standard finder could ask debuginfod).
int find_no_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) {
  return -1;
}

constexpr Dwfl_Callbacks kCallbacks = {
    find_no_elf,
    find_debuginfo_local,
    dwfl_offline_section_address,
    nullptr,
};

// ---- opened files ----------------------------------------------------------------------------

struct LoadSegment {
  uint64_t vaddr = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  bool exec = false;
};

struct FileEntry {
  // What stat() said when it was opened: a different file at the same path is opened again.
  bool found = false;
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};

  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;  // null: not an ELF file we can use
  bool fixed_address = false;     // ET_EXEC: loaded where its headers say
  std::vector<LoadSegment> loads;
  DebugSearch search;
  // What describe() found, by (virtual address looked up, distance to the frame's address): the
  // same frames recur in every crash of a job's ranks.
  std::unordered_map<uint64_t, store::NativeFrame> described;

  FileEntry() = default;
  FileEntry(const FileEntry&) = delete;
  FileEntry& operator=(const FileEntry&) = delete;
  ~FileEntry() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  bool same_file(const struct stat& st) const {
    return found && st.st_dev == dev && st.st_ino == ino && st.st_size == size &&
           st.st_mtim.tv_sec == mtime.tv_sec && st.st_mtim.tv_nsec == mtime.tv_nsec;
  }
};

// Reports `path` (or the already open `fd`, which is then owned) as the only module of a new Dwfl.
void open_elf(FileEntry& entry, const std::string& name, const char* path, int fd,
              const SymbolizerOptions& options) {
  entry.search.options = &options;
  entry.dwfl = dwfl_begin(&kCallbacks);
  if (entry.dwfl == nullptr) {
    if (fd >= 0) close(fd);
    return;
  }
  dwfl_report_begin(entry.dwfl);
  // Base 0 with add_p_vaddr: libdwfl addresses are the file's own virtual addresses.
  Dwfl_Module* mod = dwfl_report_elf(entry.dwfl, name.c_str(), path, fd, 0, true);
  dwfl_report_end(entry.dwfl, nullptr, nullptr);
  if (mod == nullptr) {
    if (fd >= 0) close(fd);
    return;
  }
  void** userdata = nullptr;
  dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (userdata != nullptr) *userdata = &entry.search;

  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  GElf_Ehdr ehdr_mem;
  GElf_Ehdr* ehdr = elf != nullptr ? gelf_getehdr(elf, &ehdr_mem) : nullptr;
  if (ehdr == nullptr || (ehdr->e_type != ET_EXEC && ehdr->e_type != ET_DYN)) return;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr_mem;
    GElf_Phdr* ph = gelf_getphdr(elf, static_cast<int>(i), &phdr_mem);
    if (ph == nullptr || ph->p_type != PT_LOAD || ph->p_filesz == 0) continue;
    entry.loads.push_back({ph->p_vaddr, ph->p_offset, ph->p_filesz, (ph->p_flags & PF_X) != 0});
  }
  if (entry.loads.empty()) return;
  entry.fixed_address = ehdr->e_type == ET_EXEC;
  entry.module = mod;
}

uint64_t page_size() {
  static const uint64_t size = [] {
    long value = sysconf(_SC_PAGESIZE);
    return value > 0 ? static_cast<uint64_t>(value) : uint64_t{4096};
  }();
  return size;
}

// The load bias (run-time address minus ELF virtual address) implied by one mapping of the file:
// the mapping at `start` holds file offset `offset`, which lies in one PT_LOAD segment. Several
// segments can share a page of the file; the one that starts exactly there, and has the same
// execute permission, wins. nullopt when no segment fits: the file changed since it was mapped.
std::optional<uint64_t> load_bias(const FileEntry& entry, const MappedModule& m) {
  const uint64_t page = page_size();
  const bool exec = m.perms.size() > 2 && m.perms[2] == 'x';
  const LoadSegment* best = nullptr;
  int best_score = -1;
  for (const LoadSegment& seg : entry.loads) {
    uint64_t file_start = seg.offset & ~(page - 1);
    if (m.offset < file_start || m.offset >= seg.offset + seg.filesz) continue;
    int score = (m.offset == file_start ? 2 : 0) + (seg.exec == exec ? 1 : 0);
    if (score > best_score) {
      best = &seg;
      best_score = score;
    }
  }
  if (best == nullptr) return std::nullopt;
  // start = bias + vaddr of `offset` = bias + best->vaddr + (offset - best->offset).
  uint64_t bias = m.start - best->vaddr - m.offset + best->offset;
  if (bias % page != 0 || (entry.fixed_address && bias != 0)) return std::nullopt;
  return bias;
}

// Where symbols cannot be read: the offset from the file's first mapping (offset 0) of the same
// path below the address, which is the load base of nearly every ELF file, else the file offset.
uint64_t guess_module_offset(const std::vector<MappedModule>& maps, const MappedModule& m,
                             uint64_t address) {
  const MappedModule* base = nullptr;
  for (const MappedModule& other : maps) {
    if (other.start > m.start) break;
    if (other.offset == 0 && other.path == m.path && other.deleted == m.deleted) base = &other;
  }
  if (base != nullptr) return address - base->start;
  return address - m.start + m.offset;
}

// The supervisor's own vdso: the same kernel gave the crashed process the same image.
std::optional<std::pair<const void*, uint64_t>> own_vdso() {
  unsigned long base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0) return std::nullopt;
  std::ifstream in("/proc/self/maps");
  std::ostringstream text;
  text << in.rdbuf();
  for (const MappedModule& m : store::parse_maps(text.str())) {
    if (m.path == "[vdso]" && m.start == base) {
      return std::make_pair(
          reinterpret_cast<const void*>(base),  // NOLINT(performance-no-int-to-ptr)
          m.end - m.start);
    }
  }
  return std::nullopt;
}

}  // namespace

// ---- Symbolizer ------------------------------------------------------------------------------

struct Symbolizer::Impl {
  SymbolizerOptions options;
  std::unordered_map<std::string, std::unique_ptr<FileEntry>> files;

  // The cached entry for `path`, checked against the disk once per call (`checked`).
  FileEntry* file(const MappedModule& m, std::set<std::string>& checked) {
    auto it = files.find(m.path);
    if (m.path == "[vdso]") {
      if (it == files.end()) it = files.emplace(m.path, open_vdso()).first;
      // Another size: another kernel or architecture than ours.
      bool same = it->second->size == static_cast<off_t>(m.end - m.start);
      return same ? it->second.get() : nullptr;
    }
    if (checked.contains(m.path) && it != files.end()) return it->second.get();
    checked.insert(m.path);
    struct stat st {};
    bool exists = stat(m.path.c_str(), &st) == 0;
    if (it != files.end()) {
      if ((exists && it->second->same_file(st)) || (!exists && !it->second->found)) {
        return it->second.get();
      }
      files.erase(it);
    }
    if (files.size() >= kMaxCachedFiles) files.clear();
    auto entry = std::make_unique<FileEntry>();
    if (exists) {
      entry->found = true;
      entry->dev = st.st_dev;
      entry->ino = st.st_ino;
      entry->size = st.st_size;
      entry->mtime = st.st_mtim;
      // Only regular files: opening a device that a process mapped (/dev/nvidia0) has effects.
      if (S_ISREG(st.st_mode)) open_elf(*entry, m.path, m.path.c_str(), -1, options);
    }
    return files.emplace(m.path, std::move(entry)).first->second.get();
  }

  std::unique_ptr<FileEntry> open_vdso() {
    auto entry = std::make_unique<FileEntry>();
    auto vdso = own_vdso();
    if (!vdso) return entry;
    int fd = memfd_create("traindoc-vdso", MFD_CLOEXEC);
    if (fd < 0) return entry;
    const auto* bytes = static_cast<const char*>(vdso->first);
    uint64_t done = 0;
    while (done < vdso->second) {
      ssize_t n = write(fd, bytes + done, vdso->second - done);
      if (n <= 0) {
        close(fd);
        return entry;
      }
      done += static_cast<uint64_t>(n);
    }
    entry->found = true;
    entry->size = static_cast<off_t>(vdso->second);
    open_elf(*entry, "[vdso]", "[vdso]", fd, options);
    return entry;
  }

  // Fills function, function_offset, file, line and inlined of `frame`, which is at `vaddr` +
  // `delta` in the file, from `vaddr`.
  void describe(FileEntry& entry, uint64_t vaddr, uint64_t delta, store::NativeFrame& frame) {
    const uint64_t key = vaddr * 2 + delta;
    if (auto it = entry.described.find(key); it != entry.described.end()) {
      frame.function = it->second.function;
      frame.function_offset = it->second.function_offset;
      frame.file = it->second.file;
      frame.line = it->second.line;
      frame.inlined = it->second.inlined;
      return;
    }
    describe_uncached(entry, vaddr, delta, frame);
    if (entry.described.size() >= kMaxDescribedPerFile) entry.described.clear();
    entry.described.emplace(key, frame);
  }

  void describe_uncached(FileEntry& entry, uint64_t vaddr, uint64_t delta,
                         store::NativeFrame& frame) {
    Dwfl_Module* mod = entry.module;
    GElf_Off offset = 0;
    GElf_Sym sym;
    if (const char* name =
            dwfl_module_addrinfo(mod, vaddr, &offset, &sym, nullptr, nullptr, nullptr)) {
      frame.function = store::demangle(name);
      frame.function_offset = offset + delta;
    }
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, vaddr)) {
      int lineno = 0;
      const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
      if (file != nullptr && lineno > 0) {
        frame.file = file;
        frame.line = lineno;
      }
    }
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(mod, vaddr, &bias);
    if (cu == nullptr) return;
    std::vector<Dwarf_Die> scopes;
    size_t budget = kMaxDiesVisited;
    function_scopes(cu, vaddr - bias, scopes, 0, budget);
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {  // innermost first
      if (dwarf_tag(&*it) == DW_TAG_inlined_subroutine) {
        std::string name = die_function_name(&*it);
        frame.inlined.push_back(name.empty() ? std::string("?") : std::move(name));
      } else {
        // The symbol table said nothing (a static function in a file stripped of .symtab whose
        // DWARF lives in a separate file, say): name it from DWARF.
        if (frame.function.empty()) {
          frame.function = die_function_name(&*it);
          Dwarf_Addr entry_pc = 0;
          if (dwarf_entrypc(&*it, &entry_pc) == 0 && vaddr - bias >= entry_pc) {
            frame.function_offset = vaddr - bias - entry_pc + delta;
          }
        }
        break;
      }
    }
  }
};

Symbolizer::Symbolizer(SymbolizerOptions options) : m_impl(std::make_unique<Impl>()) {
  m_impl->options = std::move(options);
  elf_version(EV_CURRENT);
}

Symbolizer::~Symbolizer() = default;

size_t Symbolizer::cached_files() const {
  return m_impl->files.size();
}

void Symbolizer::clear() {
  m_impl->files.clear();
}

std::vector<store::NativeFrame> Symbolizer::symbolize(std::string_view maps,
                                                      const std::vector<uint64_t>& addresses,
                                                      bool first_is_pc) {
  return symbolize(store::parse_maps(maps), addresses, first_is_pc);
}

std::vector<store::NativeFrame> Symbolizer::symbolize(const std::vector<MappedModule>& maps_in,
                                                      const std::vector<uint64_t>& addresses,
                                                      bool first_is_pc) {
  std::vector<MappedModule> sorted;
  const std::vector<MappedModule>* maps = &maps_in;
  auto by_start = [](const MappedModule& a, const MappedModule& b) { return a.start < b.start; };
  if (!std::is_sorted(maps_in.begin(), maps_in.end(), by_start)) {
    sorted = maps_in;
    std::stable_sort(sorted.begin(), sorted.end(), by_start);
    maps = &sorted;
  }

  std::set<std::string> checked;
  std::vector<store::NativeFrame> frames;
  frames.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    store::NativeFrame& frame = frames.emplace_back();
    const uint64_t address = addresses[i];
    frame.address = address;
    const MappedModule* m = store::find_mapping(*maps, address);
    if (m == nullptr || m->path.empty()) continue;
    if (m->path[0] != '/' && m->path != "[vdso]") {  // [stack], [heap], [anon:...]
      frame.module = m->path;
      frame.module_offset = address - m->start;
      continue;
    }
    if (m->deleted) {
      frame.module = m->path + " (deleted)";
      frame.module_offset = guess_module_offset(*maps, *m, address);
      continue;
    }
    frame.module = m->path;
    FileEntry* entry = m_impl->file(*m, checked);
    std::optional<uint64_t> bias;
    if (entry != nullptr && entry->module != nullptr) bias = load_bias(*entry, *m);
    if (!bias) {
      frame.module_offset = guess_module_offset(*maps, *m, address);
      continue;
    }
    frame.module_offset = address - *bias;
    // A return address follows the call: address - 1 lies in the call instruction, and so in
    // the right function, line and inlined chain even when the call ends a function.
    const bool exact = (i == 0 && first_is_pc) || address == 0;
    const uint64_t delta = exact ? 0 : 1;
    m_impl->describe(*entry, frame.module_offset - delta, delta, frame);
  }
  return frames;
}

void Symbolizer::symbolize_crash(store::Crash& crash) {
  std::vector<uint64_t> addresses;
  addresses.reserve(crash.frames.size());
  for (const store::NativeFrame& frame : crash.frames) addresses.push_back(frame.address);
  bool first_is_pc = !crash.frames.empty() && crash.frames[0].address == crash.pc;
  crash.frames = symbolize(crash.maps, addresses, first_is_pc);
}

}  // namespace traindoc::supervisor
