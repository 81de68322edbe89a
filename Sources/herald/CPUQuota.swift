import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A CPU quota for processes, through the Linux cgroup `cpu` controller: a group of its own,
/// limited to `cores` of CPU time per period (`cpu.max` under cgroup v2, `cpu.cfs_quota_us`
/// and `cpu.cfs_period_us` under cgroup v1), that processes are moved into. Writing cgroups
/// needs root (or a delegated subtree).
struct CPUQuota {
    /// The group's directory.
    let path: String
    let cores: Double

    /// The period the quota is counted over, in microseconds (the kernel's default).
    static let periodMicroseconds = 100_000

    /// Makes the group `name` with a quota of `cores` (0.3: 30 ms of CPU in every 100 ms).
    static func make(name: String, cores: Double) throws -> CPUQuota {
        let quota = max(1_000, Int((cores * Double(periodMicroseconds)).rounded()))
        let manager = FileManager.default
        if let controllers = try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.controllers", encoding: .utf8),
            controllers.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "cpu" })
        {
            // cgroup v2 on /sys/fs/cgroup: the root passes the cpu controller to its children.
            let path = "/sys/fs/cgroup/\(name)"
            try write("+cpu", to: "/sys/fs/cgroup/cgroup.subtree_control")
            try create(path, manager: manager)
            try write("\(quota) \(periodMicroseconds)", to: path + "/cpu.max")
            return CPUQuota(path: path, cores: cores)
        }
        let v1 = "/sys/fs/cgroup/cpu"
        guard manager.fileExists(atPath: v1 + "/cpu.cfs_quota_us") else {
            throw ValidationError("--node-cpu needs the cgroup cpu controller (cgroup v2 on /sys/fs/cgroup, or v1 on \(v1)); this machine has neither")
        }
        let path = "\(v1)/\(name)"
        try create(path, manager: manager)
        try write("\(periodMicroseconds)", to: path + "/cpu.cfs_period_us")
        try write("\(quota)", to: path + "/cpu.cfs_quota_us")
        return CPUQuota(path: path, cores: cores)
    }

    /// Moves process `pid` (all its threads, and the threads it starts later) into the group.
    func add(pid: Int32) throws {
        try Self.write("\(pid)", to: path + "/cgroup.procs")
    }

    /// Removes the group, once its processes have ended (a group with processes stays).
    func remove() {
        rmdir(path)
    }

    private static func create(_ path: String, manager: FileManager) throws {
        if manager.fileExists(atPath: path) { return }
        guard mkdir(path, 0o755) == 0 else {
            throw ValidationError(
                "--node-cpu: cannot create the cgroup \(path) (\(String(cString: strerror(errno)))); writing cgroups needs root")
        }
    }

    private static func write(_ value: String, to file: String) throws {
        // Not FileManager: a cgroup file takes one write(2) of the value, at offset 0.
        let descriptor = open(file, O_WRONLY)
        guard descriptor >= 0 else {
            throw ValidationError("--node-cpu: cannot open \(file) (\(String(cString: strerror(errno)))); writing cgroups needs root")
        }
        defer { close(descriptor) }
        let written = value.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        guard written >= 0 else {
            throw ValidationError("--node-cpu: cannot write \(value) to \(file) (\(String(cString: strerror(errno))))")
        }
    }
}

/// What the machine's processors did over a span of time, from `/proc/stat`.
struct MachineCPU {
    var busy: Double
    var idle: Double

    /// The machine's processor times so far, in clock ticks (all processors together).
    static func now() -> MachineCPU {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return MachineCPU(busy: 0, idle: 0) }
        // user nice system idle iowait irq softirq steal …
        let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard values.count >= 5 else { return MachineCPU(busy: 0, idle: 0) }
        let idle = values[3] + values[4]
        return MachineCPU(busy: values.prefix(8).reduce(0, +) - idle, idle: idle)
    }

    /// The share of the processors' time that was idle from `earlier` to `self`.
    func idleShare(since earlier: MachineCPU) -> Double {
        let idle = self.idle - earlier.idle, total = idle + busy - earlier.busy
        return total > 0 ? idle / total : 0
    }
}

/// The CPU time the PostgreSQL backends serving one database on this machine have used:
/// the processes whose title names the database (`postgres: user database host(port) …`).
/// The server's shared processes (WAL writer, checkpointer) are not counted, nor backends that
/// ended before the second reading: read it around work done on connections that stay open.
enum PostgresCPU {
    /// Seconds so far, or `nil` when no backend of `database` runs on this machine.
    static func seconds(database: String) -> Double? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let title = " \(database) "
        var total = 0.0, found = false
        for entry in entries where entry.first?.isNumber == true {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let end = stat.lastIndex(of: ")"),
                stat[stat.index(after: open)..<end] == "postgres",
                let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).contains(title)
            else { continue }
            // After the command name: utime is field 14, stime 15.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 12 else { continue }
            found = true
            total += (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        }
        return found ? total / ticks : nil
    }
}
