#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files, which bounds how many connections the server can hold.
enum FileDescriptorLimit {
    /// File descriptors kept for everything but client connections: the stores, the
    /// connections to the push services and to PostgreSQL, logs, listeners.
    static let reserved = 256

    /// Raises the soft limit to the hard one (as most servers do at start: the soft default
    /// of 1,024 is far below what a server needs), and returns the soft limit now in force.
    @discardableResult
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }

    /// Connections allowed by default under an open-file limit of `limit`: the limit less what
    /// is reserved, at most 10,000 and at least 16.
    static func defaultMaximumConnections(limit: Int) -> Int {
        min(10_000, max(16, limit - reserved))
    }
}
