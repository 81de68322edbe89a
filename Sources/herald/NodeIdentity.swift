import Foundation
import HeraldCore
import HeraldTLS
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// This node's lasting name: `<data-dir>/node-id`, read (or made) at start and held with a lock
/// on `<data-dir>/node.lock` for as long as the process runs.
///
/// Delivery leases begin with it, so that a node restarted after a crash knows which leases
/// were its own and resumes those notifications at once (see
/// `HubEngine.Configuration.nodeName`). The lock makes sure that two processes on one data
/// directory never share the name: the second one runs with a name of its own for the process.
final class NodeIdentity: Sendable {
    /// The name, or `nil` when another process on the data directory holds it.
    let name: String?
    private let lock: Int32

    private init(name: String?, lock: Int32) {
        self.name = name
        self.lock = lock
    }

    static func acquire(dataDirectory: String, logger: Logger) -> NodeIdentity {
        let lockPath = "\(dataDirectory)/node.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            logger.warning("Cannot open \(lockPath); this process uses a name of its own, and a crash costs the delivery lease")
            return NodeIdentity(name: nil, lock: -1)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            logger.warning(
                "Another Herald process uses the data directory \(dataDirectory); this one uses a name of its own, and a crash costs the delivery lease")
            return NodeIdentity(name: nil, lock: -1)
        }
        let path = "\(dataDirectory)/node-id"
        if let data = FileManager.default.contents(atPath: path),
            case let name = String(decoding: data, as: UTF8.self).trimmingWhitespace(),
            isValid(name)
        {
            return NodeIdentity(name: name, lock: fd)
        }
        let name = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0 ... .max)) }.joined()
        do {
            try SecureFile.write(name + "\n", to: path, mode: 0o600)
        } catch {
            logger.warning("Cannot write \(path); this process uses a name of its own, and a crash costs the delivery lease")
            flock(fd, LOCK_UN)
            close(fd)
            return NodeIdentity(name: nil, lock: -1)
        }
        return NodeIdentity(name: name, lock: fd)
    }

    /// 16 lowercase hex digits, as made here.
    static func isValid(_ name: String) -> Bool {
        name.utf8.count == 16 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// Lets another process take the name.
    func release() {
        guard lock >= 0 else { return }
        flock(lock, LOCK_UN)
        close(lock)
    }
}
