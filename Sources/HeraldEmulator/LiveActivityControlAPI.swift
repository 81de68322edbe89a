import Foundation
import HeraldCore
import NIOCore

/// The Live Activity routes of the APNs emulator's control API, JSON in and out (dates in ms
/// since 1970):
///
/// - `POST /_emulator/push-to-start-tokens` `{"topic", "attributesType"}` → `{"token"}`: the
///   app's push-to-start token for that activity type
/// - `GET /_emulator/push-to-start-tokens/{token}/activities` → `[LiveActivity]` it started
/// - `POST /_emulator/activities` `{"topic", "attributesType", "attributes"?, "contentState"?, "channel"?}`
///   → `LiveActivity`: an activity the app starts itself, with an update token, or listening on a channel
/// - `GET /_emulator/activities/{id}` → `LiveActivity` (its state, content and the pushes it received)
/// - `POST /_emulator/activities/{id}/channel` `{"channel"}` → `LiveActivity`: listen on a broadcast channel
///
/// What reached a push-to-start or update token is also in `GET /_emulator/devices/{token}/notifications`.
enum LiveActivityControlAPI {
    private struct PushToStartRequest: Decodable {
        var topic: String
        var attributesType: String
    }

    private struct TokenResponse: Encodable { var token: String }

    private struct ActivityRequest: Decodable {
        var topic: String
        var attributesType: String
        var attributes: JSONValue?
        var contentState: JSONValue?
        var channel: String?
    }

    private struct ChannelRequest: Decodable { var channel: String }

    /// The answer to a Live Activity route, or `nil` for another route.
    static func respond(to request: EmulatorRequest, control: APNsResponder, allocator: ByteBufferAllocator) -> EmulatorResponse? {
        let path = request.path.dropFirst(EmulatorControlAPI.prefix.count)
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map {
            $0.percentDecoded() ?? String($0)
        }
        guard let first = segments.first, first == "push-to-start-tokens" || first == "activities" else { return nil }
        func fail(_ status: Int, _ message: String) -> EmulatorResponse {
            EmulatorControlAPI.error(status, message, allocator: allocator)
        }
        func ok(_ value: some Encodable) -> EmulatorResponse {
            EmulatorControlAPI.json(200, value, allocator: allocator)
        }
        let now = control.configuration.now()
        switch (request.method, first, segments.count) {
        case ("POST", "push-to-start-tokens", 1):
            guard let body = decode(PushToStartRequest.self, request), !body.topic.isEmpty, !body.attributesType.isEmpty else {
                return fail(400, "body must be {\"topic\": \"…\", \"attributesType\": \"…\"}")
            }
            return ok(TokenResponse(token: control.registerPushToStartToken(topic: body.topic, attributesType: body.attributesType)))
        case ("GET", "push-to-start-tokens", 3) where segments[2] == "activities":
            return ok(control.liveActivities.activities(token: segments[1].lowercased(), now: now))
        case ("POST", "activities", 1):
            guard let body = decode(ActivityRequest.self, request), !body.topic.isEmpty, !body.attributesType.isEmpty else {
                return fail(400, "body must be {\"topic\": \"…\", \"attributesType\": \"…\", \"contentState\": {…}, \"channel\": \"…\"}")
            }
            do {
                return ok(
                    try control.startActivity(
                        topic: body.topic, attributesType: body.attributesType, attributes: body.attributes,
                        contentState: body.contentState, channelID: body.channel))
            } catch {
                return fail(400, "no channel \(body.channel ?? "") of \(body.topic)")
            }
        case ("GET", "activities", 2):
            guard let activity = control.liveActivities.activity(id: segments[1], now: now) else {
                return fail(404, "no such activity")
            }
            return ok(activity)
        case ("POST", "activities", 3) where segments[2] == "channel":
            guard let body = decode(ChannelRequest.self, request) else { return fail(400, "body must be {\"channel\": \"…\"}") }
            do {
                try control.liveActivities.subscribe(activityID: segments[1], channelID: body.channel)
            } catch {
                return fail(error.status == 404 ? 404 : 400, error.status == 404 ? "no such activity" : "no such channel of the activity's app")
            }
            return control.liveActivities.activity(id: segments[1], now: now).map { ok($0) } ?? fail(404, "no such activity")
        default:
            return fail(404, "no such emulator control route")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ request: EmulatorRequest) -> T? {
        guard let body = request.body else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }
}

extension APNsResponder {
    func registerPushToStartToken(topic: String, attributesType: String) -> String {
        let token = RandomIdentifier.hex(byteCount: 32)
        liveActivities.registerPushToStartToken(token, topic: topic, attributesType: attributesType)
        registry.register(token: token, topic: topic + Self.liveActivitySuffix)
        return token
    }

    /// An activity the app starts: with an update token, or listening on `channelID`.
    func startActivity(
        topic: String, attributesType: String, attributes: JSONValue?, contentState: JSONValue?, channelID: String?
    ) throws(LiveActivityRegistry.Refusal) -> LiveActivity {
        let token = channelID == nil ? RandomIdentifier.hex(byteCount: 32) : nil
        let activity = try liveActivities.startInApp(
            topic: topic, attributesType: attributesType, attributes: attributes, contentState: contentState,
            channelID: channelID, updateToken: token, now: configuration.now())
        if let token { registry.register(token: token, topic: topic + Self.liveActivitySuffix) }
        return activity
    }
}
