import Foundation
import Synchronization

/// The virtual devices of one emulator: their topic, whether they were unregistered, and the
/// notifications they received (the inbox).
final class DeviceRegistry: Sendable {
    enum Status {
        /// Not registered (and not seen, in an open registry).
        case unknown
        case active(topic: String?)
        case unregistered(at: Date)
    }

    private struct Device {
        var topic: String?
        var unregisteredAt: Date?
        var inbox: [ReceivedNotification] = []

        mutating func append(_ notification: ReceivedNotification, limit: Int) {
            inbox.append(notification)
            // Trim in batches so that a full inbox does not cost a shift per notification.
            if inbox.count > limit + limit / 8 {
                inbox.removeFirst(inbox.count - limit)
            }
        }
    }

    private let devices = Mutex<[String: Device]>([:])
    /// At most this many notifications are kept per device; the oldest go first.
    let inboxLimit: Int

    init(inboxLimit: Int) {
        self.inboxLimit = max(1, inboxLimit)
    }

    func register(token: String, topic: String?) {
        devices.withLock { $0[token] = Device(topic: topic) }
    }

    @inline(__always)
    func status(of token: String) -> Status {
        devices.withLock { devices in
            guard let device = devices[token] else { return .unknown }
            if let at = device.unregisteredAt { return .unregistered(at: at) }
            return .active(topic: device.topic)
        }
    }

    /// Marks `token` unregistered (creating it if unknown, for open registries).
    func unregister(token: String, at date: Date) {
        devices.withLock { devices in
            devices[token, default: Device()].unregisteredAt = date
        }
    }

    func record(_ notification: ReceivedNotification) {
        let limit = inboxLimit
        devices.withLock { devices in
            devices[notification.token, default: Device()].append(notification, limit: limit)
        }
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        devices.withLock { devices in
            guard let inbox = devices[token]?.inbox else { return [] }
            return Array(inbox.suffix(inboxLimit))
        }
    }
}
