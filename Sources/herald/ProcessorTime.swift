import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A process's line of `/proc/PID/stat`, read for its CPU time.
enum ProcessStat {
    /// Clock ticks per second, the unit of `/proc`'s CPU times.
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The user and system CPU time in `stat` (a `/proc/PID/stat` line), in clock ticks.
    static func cpuTicks(_ stat: String) -> Double? {
        guard let end = stat.lastIndex(of: ")") else { return nil }
        // After the command name: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return user + system
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
        let title = " \(database) "
        var total = 0.0, found = false
        for entry in entries where entry.first?.isNumber == true {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let end = stat.lastIndex(of: ")"),
                stat[stat.index(after: open)..<end] == "postgres",
                let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).contains(title)
            else { continue }
            guard let ticks = ProcessStat.cpuTicks(stat) else { continue }
            found = true
            total += ticks
        }
        return found ? total / ProcessStat.ticksPerSecond : nil
    }
}
