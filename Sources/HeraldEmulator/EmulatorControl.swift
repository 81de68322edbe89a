import Foundation
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
    /// How many devices received a notification, and how many more than one (with payloads recorded).
    var reach: DeviceRegistry.Reach { get }
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
/// - `GET /_emulator/stats` → `{"accepted": n, "devices": reached, "devicesReachedMoreThanOnce": m,
///   "devicesShowingMoreThanOne": k}` (an APNs device shows one notification of a collapse id)
///   (devices are counted while payloads are recorded)
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
    private struct StatsResponse: Encodable {
        var accepted: Int
        var devices: Int
        var devicesReachedMoreThanOnce: Int
        var devicesShowingMoreThanOne: Int
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
            $0.removingPercentEncoding ?? String($0)
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
        case ("DELETE", 1) where segments[0] == "faults":
            control.clearFaults()
            return json(200, Empty(), allocator: allocator)
        case ("GET", 1) where segments[0] == "stats":
            let reach = control.reach
            return json(
                200,
                StatsResponse(
                    accepted: control.acceptedCount, devices: reach.devices,
                    devicesReachedMoreThanOnce: reach.devicesReachedMoreThanOnce,
                    devicesShowingMoreThanOne: reach.devicesShowingMoreThanOne
                ),
                allocator: allocator
            )
        default:
            return error(404, "no such emulator control route", allocator: allocator)
        }
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
