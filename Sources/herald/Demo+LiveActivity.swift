import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire

extension Demo {
    /// Live Activities through the hub REST API: one started by push on a fan's phone, updated
    /// twice and ended; then a broadcast channel and one update to every activity on it.
    static func liveActivities(base: URL, catalog: HubCatalog, apns: APNsEmulator, topic: String) async throws {
        func step(_ text: String) { print("\n▸ \(text)") }
        func line(_ text: String) { print("  \(text)") }
        func state(_ activity: LiveActivity?) -> String {
            guard let activity else { return "gone" }
            let content = activity.contentState.flatMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? "-"
            return "\(activity.state.rawValue), content-state \(content)"
        }
        guard let definition = try await catalog.hub(named: "demo"),
            let full = catalog.connectionStrings(of: definition, endpoint: base.absoluteString + "/")
                .first(where: { $0.rule == SharedAccessRule.defaultFullRuleName })
        else { throw DemoError("the demo hub is missing") }
        let client = try NotificationHubClient(connectionString: full.connectionString, hubName: "demo")
        func finished(_ id: String) async throws -> String {
            var details = try await client.notificationDetails(id: id)
            for _ in 0..<100 where !["Completed", "Abandoned", "NoTargetFound"].contains(details.state.rawValue) {
                try await Task.sleep(for: .milliseconds(50))
                details = try await client.notificationDetails(id: id)
            }
            return "\(details.state.rawValue), \(details.counts.total(.success)) Success"
        }

        step("Live Activities: frank's iPhone has a push-to-start token for MatchAttributes, kept as an installation of that kind tagged fans-lions")
        let startToken = apns.registerPushToStartToken(topic: topic, attributesType: "MatchAttributes")
        try await client.createOrUpdateInstallation(
            Installation(
                id: "frank-match-start", platform: .apns, pushChannel: startToken, pushChannelKind: .pushToStart(activityType: "MatchAttributes"),
                tags: ["fans-lions"]))
        let now = Date()
        let start = try await client.send(
            .liveActivity(
                event: .start, contentState: .object([("home", .number(0)), ("away", .number(0))]), timestamp: now,
                alert: .object([("title", .string("Kick-off")), ("body", .string("Lions v Bears"))]), attributesType: "MatchAttributes",
                attributes: .object([("homeTeam", .string("Lions")), ("awayTeam", .string("Bears"))])),
            tagExpression: "fans-lions")
        line("start (apns-push-type liveactivity, topic \(topic).push-type.liveactivity) to fans-lions: \(try await finished(start))")
        guard let activity = apns.activities(token: startToken).first, let updateToken = activity.updateToken else {
            throw DemoError("the push-to-start started no activity")
        }
        line("frank's activity \(activity.id.prefix(8))…: \(state(activity))")

        step("Its update token becomes a liveActivity installation tagged match-42; two updates and the end go there")
        try await client.createOrUpdateInstallation(
            Installation(id: "frank-match-activity", platform: .apns, pushChannel: updateToken, pushChannelKind: .liveActivity, tags: ["match-42"]))
        for (second, home) in [(1, 1), (2, 2)] {
            let update = try await client.send(
                .liveActivity(
                    event: .update, contentState: .object([("home", .number(Double(home))), ("away", .number(0))]),
                    timestamp: now.addingTimeInterval(Double(second)), staleDate: now.addingTimeInterval(600)),
                tagExpression: "match-42")
            line("update \(second): \(try await finished(update)); activity \(state(apns.activity(id: activity.id)))")
        }
        let end = try await client.send(
            .liveActivity(
                event: .end, contentState: .object([("home", .number(2)), ("away", .number(0))]), timestamp: now.addingTimeInterval(3),
                dismissalDate: now.addingTimeInterval(900)),
            tagExpression: "match-42")
        line("end, dismissed in 15 minutes: \(try await finished(end)); activity \(state(apns.activity(id: activity.id)))")

        step("A broadcast channel (POST /demo/broadcastchannels) and three activities listening on it")
        let channel = try await client.createBroadcastChannel(messageStoragePolicy: 0)
        line("channel \(channel.id.prefix(12))…, message storage policy \(channel.messageStoragePolicy)")
        var listeners: [String] = []
        for _ in 0..<3 {
            listeners.append(
                try apns.startActivity(
                    topic: topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]), channelID: channel.id
                ).id)
        }
        let broadcast = try await client.broadcast(
            .liveActivity(event: .update, contentState: .object([("home", .number(1))])), channelID: channel.id)
        line("one broadcast (POST /4/broadcasts/apps/\(topic)): \(try await finished(broadcast))")
        for id in listeners { line("activity \(id.prefix(8))…: \(state(apns.activity(id: id)))") }
        let history = try await client.broadcasts(toChannel: channel.id).items
        guard history.map(\.id) == [broadcast], history.first?.outcome == "Success" else {
            throw DemoError("the channel's history shows \(history.map { "\($0.id) \($0.outcome ?? $0.state)" }), not the one broadcast delivered")
        }
        line("the channel's sends (GET /demo/broadcastchannels/{id}/messages): \(broadcast.prefix(8))… Success")
        try await client.deleteBroadcastChannel(id: channel.id)
        line("channel deleted; the hub's channels now: \(try await client.broadcastChannelIDs().count)")
    }
}

/// A step of the demo that did not go as it should.
struct DemoError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
