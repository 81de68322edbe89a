import Foundation
import HeraldClient
import HeraldCore
import NIOCore

/// What `/_emulator/…` on an emulator's port can do: the same operations as its in-process API.
protocol EmulatorControl: Sendable {
    /// Registers a device; `topic` is required by APNs and ignored by FCM.
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String
    func notifications(for token: String) -> [ReceivedNotification]
    /// Unregisters `token` and returns when that happened.
    func controlUnregister(token: String) -> Date
    func injectFaults(_ fault: Fault, count: Int)
    func clearFaults()
    var acceptedCount: Int { get }
    /// When sends resumed after `moment`, and how long they stood still since.
    func acceptPauses(since moment: Date) -> AcceptLog.Pauses
    /// How many devices received a notification, and how many more than one (with payloads recorded).
    var reach: DeviceRegistry.Reach { get }
    /// Its devices' receipts.
    var receipts: DeviceReceipts { get }
}

struct ControlError: Error {
    var status: Int
    var message: String
}

/// The HTTP face of ``EmulatorControl``, JSON in and out:
///
/// - `POST /_emulator/devices` `{"topic": …}` → `{"token": …}`
/// - `GET /_emulator/devices/{token}/notifications` → `[ReceivedNotification]` (dates in ms since 1970)
/// - `POST /_emulator/devices/{token}/unregister` → `{"token": …, "timestamp": ms}`
/// - `POST /_emulator/faults` `{"status", "reason", "retryAfter"?, "count"}` → `{"queued": count}`
/// - `DELETE /_emulator/faults` → `{}`
/// - `PUT /_emulator/receipts` `{"connectionString": …, "hub": …, "fraction": 0.99}` → `{}`: a
///   `fraction` of the devices (chosen by their token) confirm what they receive to that hub
///   (``DeviceReceipts``); `DELETE /_emulator/receipts` → `{}` stops them
/// - `GET /_emulator/stats` → `{"accepted": n, "devices": reached, "devicesReachedMoreThanOnce": m,
///   "devicesShowingMoreThanOne": k}` (an APNs device shows one notification of a collapse id)
///   (devices are counted while payloads are recorded); with `?since=ms` (since 1970), also
///   `"firstAcceptedSince"` and `"lastAcceptedSince"`: ms (or `null`), and `"longestPauseSince"`:
///   seconds: when the first and the last send at or after that moment were accepted, and the
///   longest time without a send from that moment to the last send (see ``AcceptLog``); and
///   `"receiptsConfirmed"`, `"receiptsFailed"`: receipts the devices posted, and posts that failed
enum EmulatorControlAPI {
    static let prefix = "/_emulator/"

    private struct DeviceRequest: Decodable { var topic: String? }
    private struct DeviceResponse: Encodable { var token: String }
    private struct UnregisterResponse: Encodable {
        var token: String
        var timestamp: Int64
    }
    private struct FaultRequest: Decodable {
        var status: Int
        var reason: String
        var retryAfter: Int?
        var count: Int?
    }
    private struct FaultResponse: Encodable { var queued: Int }
    private struct ReceiptsRequest: Decodable {
        var connectionString: String
        var hub: String
        var fraction: Double?
    }
    private struct StatsResponse: Encodable {
        var accepted: Int
        var devices: Int
        var devicesReachedMoreThanOnce: Int
        var devicesShowingMoreThanOne: Int
        var firstAcceptedSince: Int64?
        var lastAcceptedSince: Int64?
        var longestPauseSince: Double?
        var receipts: DeviceReceipts.Counts

        private enum CodingKeys: String, CodingKey {
            case accepted, devices, devicesReachedMoreThanOnce, devicesShowingMoreThanOne, firstAcceptedSince, lastAcceptedSince, longestPauseSince
            case receiptsConfirmed, receiptsFailed
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(accepted, forKey: .accepted)
            try container.encode(devices, forKey: .devices)
            try container.encode(devicesReachedMoreThanOnce, forKey: .devicesReachedMoreThanOnce)
            try container.encode(devicesShowingMoreThanOne, forKey: .devicesShowingMoreThanOne)
            try container.encode(receipts.confirmed, forKey: .receiptsConfirmed)
            try container.encode(receipts.failed, forKey: .receiptsFailed)
            // Asked with `since`: the first send is `null` when there was none.
            if let longestPauseSince {
                try container.encode(firstAcceptedSince, forKey: .firstAcceptedSince)
                try container.encode(lastAcceptedSince, forKey: .lastAcceptedSince)
                try container.encode(longestPauseSince, forKey: .longestPauseSince)
            }
        }
    }
    private struct Empty: Encodable {}
    private struct ErrorResponse: Encodable { var error: String }

    static func respond(
        to request: EmulatorRequest,
        control: some EmulatorControl,
        allocator: ByteBufferAllocator
    ) -> EmulatorResponse {
        let path = request.path.dropFirst(prefix.count)
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map {
            $0.percentDecoded() ?? String($0)
        }
        switch (request.method, segments.count) {
        case ("POST", 1) where segments[0] == "devices":
            let topic: String?
            if let body = request.body, body.readableBytes > 0 {
                guard let decoded = try? JSONDecoder().decode(DeviceRequest.self, from: Data(body.readableBytesView))
                else { return error(400, "body must be {\"topic\": \"…\"}", allocator: allocator) }
                topic = decoded.topic
            } else {
                topic = nil
            }
            do {
                let token = try control.controlRegisterDevice(topic: topic)
                return json(200, DeviceResponse(token: token), allocator: allocator)
            } catch {
                return self.error(error.status, error.message, allocator: allocator)
            }
        case ("GET", 3) where segments[0] == "devices" && segments[2] == "notifications":
            return json(200, control.notifications(for: segments[1]), allocator: allocator)
        case ("POST", 3) where segments[0] == "devices" && segments[2] == "unregister":
            let at = control.controlUnregister(token: segments[1])
            let response = UnregisterResponse(token: segments[1], timestamp: Int64(at.timeIntervalSince1970 * 1000))
            return json(200, response, allocator: allocator)
        case ("POST", 1) where segments[0] == "faults":
            guard let body = request.body,
                let decoded = try? JSONDecoder().decode(FaultRequest.self, from: Data(body.readableBytesView))
            else {
                return error(
                    400,
                    "body must be {\"status\": 503, \"reason\": \"…\", \"retryAfter\": 5, \"count\": 1}",
                    allocator: allocator
                )
            }
            guard (400...599).contains(decoded.status) else {
                return error(400, "status must be 400…599", allocator: allocator)
            }
            let count = decoded.count ?? 1
            control.injectFaults(
                Fault(status: decoded.status, reason: decoded.reason, retryAfter: decoded.retryAfter),
                count: count
            )
            return json(200, FaultResponse(queued: max(0, count)), allocator: allocator)
        case ("PUT", 1) where segments[0] == "receipts":
            guard let body = request.body,
                let decoded = try? JSONDecoder().decode(ReceiptsRequest.self, from: Data(body.readableBytesView))
            else {
                return error(400, #"body must be {"connectionString": "Endpoint=…", "hub": "…", "fraction": 0.99}"#, allocator: allocator)
            }
            guard (decoded.fraction ?? 1) >= 0, (decoded.fraction ?? 1) <= 1 else {
                return error(400, "fraction must be 0…1", allocator: allocator)
            }
            do {
                let hub = try NotificationHubClient(connectionString: decoded.connectionString, hubName: decoded.hub)
                control.receipts.configure(DeviceReceipts.Configuration(hub: hub, fraction: decoded.fraction ?? 1))
            } catch {
                return self.error(400, "connectionString: \(error)", allocator: allocator)
            }
            return json(200, Empty(), allocator: allocator)
        case ("DELETE", 1) where segments[0] == "receipts":
            control.receipts.configure(nil)
            return json(200, Empty(), allocator: allocator)
        case ("DELETE", 1) where segments[0] == "faults":
            control.clearFaults()
            return json(200, Empty(), allocator: allocator)
        case ("GET", 1) where segments[0] == "stats":
            let reach = control.reach
            var stats = StatsResponse(
                accepted: control.acceptedCount, devices: reach.devices,
                devicesReachedMoreThanOnce: reach.devicesReachedMoreThanOnce,
                devicesShowingMoreThanOne: reach.devicesShowingMoreThanOne,
                receipts: control.receipts.counts
            )
            if let since = queryItem("since", of: request.target) {
                guard let milliseconds = Int64(since), milliseconds >= 0 else {
                    return error(400, "since must be milliseconds since 1970", allocator: allocator)
                }
                let pauses = control.acceptPauses(since: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
                stats.firstAcceptedSince = pauses.firstAccepted.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
                stats.lastAcceptedSince = pauses.lastAccepted.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
                stats.longestPauseSince = pauses.longestPause
            }
            return json(200, stats, allocator: allocator)
        default:
            return error(404, "no such emulator control route", allocator: allocator)
        }
    }

    /// The value of `name` in `target`'s query, if given.
    private static func queryItem(_ name: String, of target: String) -> String? {
        guard let question = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts[0] == name { return parts.count > 1 ? String(parts[1]) : "" }
        }
        return nil
    }

    static func json(_ status: Int, _ value: some Encodable, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return EmulatorResponse(status: 500)
        }
        return EmulatorResponse(
            status: status,
            headers: [("content-type", "application/json")],
            body: allocator.buffer(bytes: data)
        )
    }

    static func error(_ status: Int, _ message: String, allocator: ByteBufferAllocator) -> EmulatorResponse {
        json(status, ErrorResponse(error: message), allocator: allocator)
    }
}
