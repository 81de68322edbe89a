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
        /// Every notification it received, also those that left the inbox.
        var received = 0
        /// The notifications it shows: those received, less those that replaced an earlier one
        /// by its collapse id.
        var shown = 0

        mutating func append(_ notification: ReceivedNotification, limit: Int) {
            inbox.append(notification)
            // Trim in batches so that a full inbox does not cost a shift per notification.
            if inbox.count > limit + limit / 8 {
                inbox.removeFirst(inbox.count - limit)
            }
        }
    }

    /// How many devices received at least one notification, how many more than one, and how
    /// many show more than one (a notification that replaced an earlier one of its collapse id
    /// is shown in its place).
    struct Reach: Sendable, Hashable, Codable {
        var devices = 0
        var devicesReachedMoreThanOnce = 0
        var devicesShowingMoreThanOne = 0
    }

    private struct State {
        var devices: [String: Device] = [:]
        var reach = Reach()
    }

    private let state = Mutex(State())
    /// At most this many notifications are kept per device; the oldest go first.
    let inboxLimit: Int

    init(inboxLimit: Int) {
        self.inboxLimit = max(1, inboxLimit)
    }

    func register(token: String, topic: String?) {
        state.withLock { $0.devices[token] = Device(topic: topic) }
    }

    @inline(__always)
    func status(of token: String) -> Status {
        state.withLock { state in
            guard let device = state.devices[token] else { return .unknown }
            if let at = device.unregisteredAt { return .unregistered(at: at) }
            return .active(topic: device.topic)
        }
    }

    /// Marks `token` unregistered (creating it if unknown, for open registries).
    func unregister(token: String, at date: Date) {
        state.withLock { state in
            state.devices[token, default: Device()].unregisteredAt = date
        }
    }

    /// Keeps `notification` in its device's inbox. With a `collapseID` (APNs
    /// `apns-collapse-id`), it replaces the notification of that collapse id still in the
    /// inbox, as a device shows only the latest of them.
    func record(_ notification: ReceivedNotification, collapseID: String? = nil) {
        let limit = inboxLimit
        state.withLock { state in
            var device = state.devices.removeValue(forKey: notification.token) ?? Device()
            if device.received == 0 { state.reach.devices += 1 }
            if device.received == 1 { state.reach.devicesReachedMoreThanOnce += 1 }
            device.received += 1
            if let collapseID, let earlier = device.inbox.lastIndex(where: { $0.headers["apns-collapse-id"] == collapseID }) {
                device.inbox.remove(at: earlier)
            } else {
                device.shown += 1
                if device.shown == 2 { state.reach.devicesShowingMoreThanOne += 1 }
            }
            device.append(notification, limit: limit)
            state.devices[notification.token] = device
        }
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        state.withLock { state in
            guard let inbox = state.devices[token]?.inbox else { return [] }
            return Array(inbox.suffix(inboxLimit))
        }
    }

    /// How many devices were reached, once or more (counted also after their inbox trimmed).
    var reach: Reach { state.withLock { $0.reach } }
}
