// cannbuild sandbox: the emulated device profiler.
//
// On an NPU the profiler (torch_npu.profiler, msprof) collects every kernel's
// device start and duration and writes them out as kernel_details.csv and
// trace_view.json.  Here every "kernel" runs on the CPU, so the runtime times
// them itself: aclnn launches through the executor (libnnopbase's aclemuLaunch)
// and whatever a framework reports with aclemuKernelBegin/Run/End.  With
// CANNBUILD_EMU_PROFILE_DIR set, the records are written at aclFinalize (or at
// exit) as torch_npu 2.13 writes its ASCEND_PROFILER_OUTPUT, quirks included:
// CRLF rows (Python's csv.writer), a TAB after each start time, literal quotes
// around shape lists, N/A for what the level does not collect, a bare JSON
// array with string timestamps, and at Level0 the CANN track pruned down to its
// labels and flows (shared/reference/profiler-formats.md §1.2, §1.6).

#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "emu/emu_runtime.h"
#include "emu_internal.h"

namespace {

struct Record {
    std::string api;
    int32_t stream = 0;
    int device = 0;
    uint64_t api_ns = 0;    // host: the aclnn call began
    uint64_t start_ns = 0;  // device: the kernel began
    uint64_t end_ns = 0;
    bool done = false;
    std::string name, op_type, core;
    uint32_t block = 0, mix_block = 0;
    std::string in_shapes, in_dtypes, in_formats, out_shapes, out_dtypes, out_formats;
};

std::mutex g_profile_mutex;
std::vector<Record> g_records;  // index + 1 is the token
bool g_written = false;
bool g_atexit = false;

uint64_t EpochNs() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char *OutputDir() {
    const char *dir = std::getenv("CANNBUILD_EMU_PROFILE_DIR");
    return dir != nullptr && dir[0] != '\0' ? dir : nullptr;
}

bool Level1() {
    const char *level = std::getenv("CANNBUILD_EMU_PROFILE_LEVEL");
    return level != nullptr && (std::strcmp(level, "Level1") == 0 || std::strcmp(level, "Level2") == 0);
}

std::string Text(const char *s) { return s != nullptr ? s : ""; }

std::string Us(uint64_t ns) {  // epoch microseconds with 3 decimals
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                  static_cast<unsigned long long>(ns % 1000));
    return buf;
}

std::string Fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return buf;
}

// A shape cell: msprof's Python path wraps the list in literal quotes, and
// csv.writer then quotes the cell and doubles them: """1,8,512;...""".
std::string ShapeCell(const std::string &shapes) {
    if (shapes.empty()) return "N/A";
    return "\"\"\"" + shapes + "\"\"\"";
}

std::string Or(const std::string &s) { return s.empty() ? "N/A" : s; }

std::string JsonString(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string RunName() {
    char host[HOST_NAME_MAX + 1] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
    uint64_t ns = EpochNs();
    time_t secs = static_cast<time_t>(ns / 1000000000ull);
    struct tm local;
    localtime_r(&secs, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &local);
    char name[HOST_NAME_MAX + 96];
    std::snprintf(name, sizeof(name), "%s_%d_%s%03llu_ascend_pt", host, static_cast<int>(getpid()), stamp,
                  static_cast<unsigned long long>((ns / 1000000ull) % 1000ull));
    return name;
}

bool WriteFile(const std::string &path, const std::string &data) {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    return static_cast<bool>(out);
}

std::string KernelDetails(const std::vector<const Record *> &rows, bool level1) {
    std::ostringstream csv;
    const char *crlf = "\r\n";
    if (level1) {
        csv << "Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
               "Duration(us),Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,Input Data Types,"
               "Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID"
            << crlf;
    } else {
        csv << "Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,"
               "Mix Block Num,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,"
               "Output Formats"
            << crlf;
    }
    std::map<int32_t, uint64_t> last_end;
    std::map<int32_t, int> task_id;
    for (const Record *r : rows) {
        auto prev = last_end.find(r->stream);
        std::string wait = prev == last_end.end() || r->start_ns < prev->second
                               ? "0"
                               : Fixed((r->start_ns - prev->second) / 1000.0, 6);
        last_end[r->stream] = r->end_ns;
        std::string dur = Fixed((r->end_ns - r->start_ns) / 1000.0, 3);
        std::string start = Us(r->start_ns) + "\t";  // msprof's TAB; csv.writer leaves it unquoted
        bool mix = r->core.rfind("MIX", 0) == 0;
        if (level1) {
            csv << r->device << ",4294967295," << (task_id[r->stream]++ + 1) << "," << r->stream << "," << r->name
                << "," << r->op_type << ",dynamic," << r->core << "," << start << "," << dur << "," << wait << ","
                << r->block << "," << r->mix_block << ",NO," << ShapeCell(r->in_shapes) << "," << Or(r->in_dtypes)
                << "," << Or(r->in_formats) << "," << ShapeCell(r->out_shapes) << "," << Or(r->out_dtypes) << ","
                << Or(r->out_formats) << "," << (mix ? "0" : "N/A") << crlf;
        } else {  // Level0 collects no op type, core type or tensors
            csv << r->device << "," << r->name << ",N/A,N/A," << start << "," << dur << "," << wait << ","
                << r->block << "," << r->mix_block << ",N/A,N/A,N/A,N/A,N/A,N/A" << crlf;
        }
    }
    return csv.str();
}

std::string TraceView(const std::vector<const Record *> &rows, bool level1) {
    const long long pid = static_cast<long long>(getpid());
    const int device = rows.empty() ? 0 : rows.front()->device;
    const long long hw_pid = (pid << 10) | (14 << 5) | device;  // msprof's GetFormatPid, sort index 14
    const long long cann_pid = (pid << 10) | (7 << 5) | 31;     // the host's CANN layer
    std::vector<std::string> events;
    auto meta = [&](long long p, long long tid, const char *kind, const std::string &key, const std::string &value) {
        events.push_back("{\"name\": \"" + std::string(kind) + "\", \"pid\": " + std::to_string(p) +
                         ", \"tid\": " + std::to_string(tid) + ", \"args\": {\"" + key + "\": " + value +
                         "}, \"ph\": \"M\"}");
    };
    meta(hw_pid, 0, "process_name", "name", JsonString("Ascend Hardware"));
    meta(hw_pid, 0, "process_labels", "labels", JsonString("NPU " + std::to_string(device)));
    meta(hw_pid, 0, "process_sort_index", "sort_index", "14");
    std::map<int32_t, bool> streams;
    for (const Record *r : rows) streams[r->stream] = true;
    for (const auto &s : streams) meta(hw_pid, s.first, "thread_name", "name", JsonString("Stream " + std::to_string(s.first)));
    if (level1) meta(cann_pid, 0, "process_name", "name", JsonString("CANN"));  // Level0 prunes it ...
    meta(cann_pid, 0, "process_labels", "labels", JsonString("CPU"));          // ... but not these
    meta(cann_pid, pid, "thread_name", "name", JsonString("Thread " + std::to_string(pid)));
    std::map<int32_t, int> task_id;
    long long flow = 38654705663ll;
    for (const Record *r : rows) {
        const int task = ++task_id[r->stream];
        const std::string ts = Us(r->start_ns);
        if (level1) {
            events.push_back("{\"name\": " + JsonString("AscendCL@" + r->api) + ", \"pid\": " +
                             std::to_string(cann_pid) + ", \"tid\": " + std::to_string(pid) + ", \"ts\": \"" +
                             Us(r->api_ns) + "\", \"dur\": " + Fixed((r->end_ns - r->api_ns) / 1000.0, 3) +
                             ", \"args\": {\"Thread Id\": " + std::to_string(pid) +
                             ", \"Mode\": \"ACL_NN\", \"level\": \"acl\", \"id\": " + JsonString(r->api) +
                             ", \"item_id\": \"0\", \"connection_id\": " + std::to_string(task) + "}, \"ph\": \"X\"}");
        }
        const std::string id = std::to_string(++flow);
        events.push_back("{\"name\": \"HostToDevice" + id + "\", \"ph\": \"s\", \"cat\": \"HostToDevice\", \"id\": \"" +
                         id + "\", \"pid\": " + std::to_string(cann_pid) + ", \"tid\": " + std::to_string(pid) +
                         ", \"ts\": \"" + Us(r->api_ns) + "\"}");
        events.push_back("{\"name\": " + JsonString(r->name) + ", \"pid\": " + std::to_string(hw_pid) +
                         ", \"tid\": " + std::to_string(r->stream) + ", \"ts\": \"" + ts + "\", \"dur\": " +
                         Fixed((r->end_ns - r->start_ns) / 1000.0, 3) +
                         ", \"args\": {\"Model Id\": 4294967295, \"Task Type\": " + JsonString(r->core) +
                         ", \"Physic Stream Id\": " + std::to_string(r->stream) + ", \"Task Id\": " +
                         std::to_string(task) + ", \"Batch Id\": 0, \"Subtask Id\": 4294967295, \"connection_id\": " +
                         std::to_string(task) + "}, \"ph\": \"X\"}");
        events.push_back("{\"name\": \"HostToDevice" + id + "\", \"ph\": \"f\", \"id\": \"" + id + "\", \"ts\": \"" +
                         ts + "\", \"cat\": \"HostToDevice\", \"pid\": " + std::to_string(hw_pid) +
                         ", \"tid\": " + std::to_string(r->stream) + ", \"bp\": \"e\"}");
    }
    std::string out = "[";
    for (size_t i = 0; i < events.size(); ++i) out += (i ? ", " : "") + events[i];
    return out + "]";
}

void WriteProfileLocked() {
    const char *dir = OutputDir();
    if (g_written || dir == nullptr) return;
    g_written = true;
    std::vector<const Record *> rows;
    for (const Record &r : g_records)
        if (r.done) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Record *a, const Record *b) { return a->start_ns < b->start_ns; });
    const bool level1 = Level1();
    const std::string run = std::string(dir) + "/" + RunName();
    const std::string tmp = run + ".partial";
    const std::string out = tmp + "/ASCEND_PROFILER_OUTPUT";
    for (const std::string &d : {std::string(dir), tmp, out}) mkdir(d.c_str(), 0755);
    std::ostringstream info;
    info << "{\n    \"config\": {\n        \"common_config\": {\n            \"activities\": [\n"
         << "                \"ProfilerActivity.CPU\",\n                \"ProfilerActivity.NPU\"\n            ]\n"
         << "        },\n        \"experimental_config\": {\n            \"_profiler_level\": \""
         << (level1 ? "Level1" : "Level0") << "\",\n            \"_aic_metrics\": \"ACL_AICORE_NONE\"\n"
         << "        }\n    },\n    \"cann_version\": \"" << emu::CannVersion() << "\",\n"
         << "    \"cannbuild_sandbox\": \"kernels timed on the CPU by the emulated runtime\"\n}";
    bool ok = WriteFile(tmp + "/profiler_info.json", info.str()) &&
              WriteFile(out + "/kernel_details.csv", KernelDetails(rows, level1)) &&
              WriteFile(out + "/trace_view.json", TraceView(rows, level1)) && WriteFile(out + "/analyse.done", "");
    if (!ok || std::rename(tmp.c_str(), run.c_str()) != 0)
        std::fprintf(stderr, "cannbuild sandbox: the profiler output could not be written to %s\n", run.c_str());
}

void AtExit() {
    std::lock_guard<std::mutex> lock(g_profile_mutex);
    WriteProfileLocked();
}

Record *Find(uint64_t token) {
    if (token == 0 || token > g_records.size()) return nullptr;
    return &g_records[token - 1];
}

}  // namespace

namespace emu {

void FlushProfile() {
    std::lock_guard<std::mutex> lock(g_profile_mutex);
    if (!g_records.empty()) WriteProfileLocked();
}

}  // namespace emu

extern "C" {

int aclemuProfiling(void) { return OutputDir() != nullptr ? 1 : 0; }

uint64_t aclemuKernelBegin(const char *api, aclrtStream stream) {
    if (OutputDir() == nullptr) return 0;
    Record r;
    r.api = Text(api);
    r.stream = emu::StreamId(stream);
    r.device = emu::CurrentDevice();
    r.api_ns = EpochNs();
    r.start_ns = r.api_ns;
    std::lock_guard<std::mutex> lock(g_profile_mutex);
    if (!g_atexit) {
        std::atexit(AtExit);
        g_atexit = true;
    }
    g_records.push_back(r);
    return g_records.size();
}

void aclemuKernelRun(uint64_t token) {
    uint64_t now = EpochNs();
    std::lock_guard<std::mutex> lock(g_profile_mutex);
    Record *r = Find(token);
    if (r != nullptr) r->start_ns = now;
}

void aclemuKernelEnd(uint64_t token, const aclemuKernelDesc *desc) {
    uint64_t now = EpochNs();
    std::lock_guard<std::mutex> lock(g_profile_mutex);
    Record *r = Find(token);
    if (r == nullptr || desc == nullptr) return;
    r->end_ns = now > r->start_ns ? now : r->start_ns;
    r->name = Text(desc->name);
    r->op_type = Text(desc->opType);
    r->core = Text(desc->coreType);
    const bool mix = r->core.rfind("MIX", 0) == 0;
    const bool vector = r->core == "AI_VECTOR_CORE" || r->core == "MIX_AIV";
    r->block = desc->blockDim != 0 ? desc->blockDim
                                   : static_cast<uint32_t>(vector ? emu::VectorCores() : emu::CubeCores());
    r->mix_block = desc->mixBlockDim != 0 ? desc->mixBlockDim : (mix ? static_cast<uint32_t>(emu::VectorCores()) : 0);
    r->in_shapes = Text(desc->inputShapes);
    r->in_dtypes = Text(desc->inputDtypes);
    r->in_formats = Text(desc->inputFormats);
    r->out_shapes = Text(desc->outputShapes);
    r->out_dtypes = Text(desc->outputDtypes);
    r->out_formats = Text(desc->outputFormats);
    r->done = true;
}

}  // extern "C"
