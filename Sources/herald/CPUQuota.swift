import ArgumentParser
import Foundation
import HeraldCore

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
            controllers.split(separator: " ").contains(where: { $0.trimmingWhitespace() == "cpu" })
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
