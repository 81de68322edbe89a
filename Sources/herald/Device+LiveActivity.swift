import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator

/// The Live Activities a simulated device (`herald device --live-activity TYPE`) keeps on the
/// server's APNs emulator: the app's push-to-start token for TYPE, the activity the app started
/// (with an update token, or listening on a broadcast channel), and those that pushes started.
struct LiveActivitySimulation {
    struct TokenResponse: Decodable {
        var token: String
    }

    let emulator: String
    let pushToStartToken: String
    /// The activity the app started itself.
    let appActivity: LiveActivity
    /// The activities seen so far, by id, with how many pushes of each were printed.
    private(set) var printed: [String: Int] = [:]
    private var order: [String] = []

    static func start(
        emulator: String, topic: String, attributesType: String, channel: String?,
        request: (_ method: String, _ url: String, _ body: [String: String]?) async throws -> LiveActivity,
        tokenRequest: (_ url: String, _ body: [String: String]) async throws -> String
    ) async throws -> LiveActivitySimulation {
        let token = try await tokenRequest(
            "\(emulator)/_emulator/push-to-start-tokens", ["topic": topic, "attributesType": attributesType])
        print("activity push-to-start token \(token) (\(attributesType), topic \(topic).push-type.liveactivity)")
        var body = ["topic": topic, "attributesType": attributesType]
        if let channel { body["channel"] = channel }
        let activity = try await request("POST", "\(emulator)/_emulator/activities", body)
        var simulation = LiveActivitySimulation(emulator: emulator, pushToStartToken: token, appActivity: activity)
        simulation.track(activity.id)
        if let channel {
            print("activity \(activity.id) started in the app, listening on broadcast channel \(channel)")
        } else {
            print("activity \(activity.id) started in the app, update token \(activity.updateToken ?? "-")")
        }
        return simulation
    }

    /// Registers the push-to-start token (with `tags`) and the app's activity's update token
    /// with the app backend, as the app does, and says how to reach them.
    func register(with client: HeraldClient, attributesType: String, user: String, tags: [String]) async throws {
        let startID = try await client.registerPushToStart(token: Self.bytes(hex: pushToStartToken), activityType: attributesType, tags: tags)
        print("registered the push-to-start token: registration \(startID); start one with POST /api/notifications/liveactivity?to_tag=\(user)")
        if let token = appActivity.updateToken {
            let updateID = try await client.registerLiveActivity(updateToken: Self.bytes(hex: token), activityID: appActivity.id)
            print(
                "registered activity \(appActivity.id)'s update token: registration \(updateID); update it with POST /api/notifications/liveactivity?to_tag=\(user)&activity=\(appActivity.id)"
            )
        }
    }

    /// The bytes a token's hex digits stand for (the emulator's tokens are well-formed hex).
    static func bytes(hex: String) -> Data {
        var data = Data(capacity: hex.utf8.count / 2)
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), index != next {
            data.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return data
    }

    private mutating func track(_ id: String) {
        guard printed[id] == nil else { return }
        printed[id] = 0
        order.append(id)
    }

    /// Prints what reached the activities since the last poll; how many pushes reached them in all.
    mutating func poll(
        activities: (_ url: String) async throws -> [LiveActivity],
        activity: (_ url: String) async throws -> LiveActivity
    ) async throws -> Int {
        for started in try await activities("\(emulator)/_emulator/push-to-start-tokens/\(pushToStartToken)/activities") {
            track(started.id)
        }
        let formatter = ISO8601DateFormatter()
        var total = 0
        for id in order {
            let current = try await activity("\(emulator)/_emulator/activities/\(id)")
            let seen = printed[id] ?? 0
            for push in current.received.dropFirst(seen) {
                print("[\(formatter.string(from: push.receivedAt))] \(Self.render(push, activity: current))")
            }
            printed[id] = current.received.count
            total += current.received.count
        }
        return total
    }

    /// One line for a push that reached an activity, as the Lock Screen would change.
    static func render(_ push: ReceivedNotification, activity: LiveActivity) -> String {
        let aps = (try? JSONValue(parsing: push.payload.utf8))?["aps"]
        var event = "push"
        if case .string(let name) = aps?["event"] { event = name }
        let via = push.headers["apns-channel-id"].map { "broadcast on \($0)" } ?? "push"
        var line = "live activity \(activity.id.prefix(8)) \(event) (\(via))"
        if event == "start" {
            line += ", started by push-to-start; " + (activity.updateToken.map { "update token \($0)" } ?? "on channel \(activity.channelID ?? "-")")
        }
        if let state = aps?["content-state"], let text = try? encode(state) { line += "\n         content-state \(text)" }
        if event == "end" { line += "\n         ended; \(activity.state.rawValue)" }
        return line
    }

    private static func encode(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
