import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import Testing

/// Live Activity sends through the hub REST API, as the cloud hub's clients send them: an
/// `apple` send with `apns-push-type: liveactivity` to a tag, to an installation and direct,
/// delivered on the app's `.push-type.liveactivity` topic; a payload APNs would refuse is a
/// `400` naming the field, and nothing is sent.
@Suite struct HubAPILiveActivityTests {
    static let liveActivityTopic = TestHerald.topic + ".push-type.liveactivity"
    static let headers = [("apns-push-type", "liveactivity"), ("apns-priority", "10")]

    static var now: Int { Int(Date().timeIntervalSince1970) }

    static func body(_ aps: String) -> String { #"{"aps":\#(aps)}"# }

    @Test func anActivityIsStartedByPushUpdatedTwiceAndEnded() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            // Push-to-start: the app's push-to-start token, registered under a tag as one (its
            // kind and activity type); a fan's device token under the same tag gets no start,
            // nor does a push-to-start token for another activity type.
            let startToken = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "MatchAttributes")
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>fans-lions</Tags><DeviceToken>\(startToken)</DeviceToken>"
                    + "<PushChannelKind>pushToStart</PushChannelKind><ActivityType>MatchAttributes</ActivityType></AppleRegistrationDescription>"
            )
            let phone = herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>fans-lions</Tags><DeviceToken>\(phone)</DeviceToken></AppleRegistrationDescription>")
            let otherStartToken = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "RaceAttributes")
            #expect(
                try await HubAPIInstallationTests.put(
                    server, "race-start",
                    #"{"installationId":"race-start","platform":"apns","pushChannel":"\#(otherStartToken)","pushChannelKind":"pushToStart","activityType":"RaceAttributes","tags":["fans-lions"]}"#
                ).status == 200)
            let start = Self.body(
                #"{"timestamp":\#(Self.now),"event":"start","content-state":{"home":0,"away":0},"attributes-type":"MatchAttributes","attributes":{"homeTeam":"Lions","awayTeam":"Bears"},"alert":{"title":"Kick-off","body":"Lions v Bears"}}"#
            )
            let started = try server.acceptedID(try await server.send(format: "apple", start, tags: "fans-lions", headers: Self.headers))
            #expect(HubAPISendTests.count(try await server.finishedDetails(started), "ApnsOutcomeCounts") == 1)
            let received = try #require(herald.apns.notifications(for: startToken).last)
            #expect(received.payload == start)
            #expect(received.headers["apns-topic"] == Self.liveActivityTopic)
            #expect(received.headers["apns-push-type"] == "liveactivity")
            #expect(herald.apns.notifications(for: phone).isEmpty, "a device's token gets no start")
            #expect(herald.apns.notifications(for: otherStartToken).isEmpty, "another activity type's token gets no start")
            let activity = try #require(herald.apns.activities(token: startToken).first)
            #expect(activity.attributesType == "MatchAttributes")
            #expect(activity.state == .active)
            let updateToken = try #require(activity.updateToken)

            // Update 1: direct to the activity's update token, with a stale date.
            let staleAt = Self.now + 600
            let first = try await server.send(
                format: "apple", Self.body(#"{"timestamp":\#(Self.now),"event":"update","content-state":{"home":1,"away":0},"stale-date":\#(staleAt)}"#),
                query: "&direct", headers: Self.headers + [("ServiceBusNotification-DeviceHandle", updateToken)])
            #expect(HubAPISendTests.count(try await server.finishedDetails(try server.acceptedID(first)), "ApnsOutcomeCounts") == 1)
            var current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.contentState?["home"] == .number(1))
            #expect(current.staleDate == Date(timeIntervalSince1970: TimeInterval(staleAt)))

            // Update 2: to an installation that holds the update token, by its tag; the
            // timestamp is newer, or the device would drop it.
            let installation = try await HubAPIInstallationTests.put(
                server, "activity-1",
                #"{"installationId":"activity-1","platform":"apns","pushChannel":"\#(updateToken)","pushChannelKind":"liveActivity","tags":["match-42","fans-lions"]}"#
            )
            #expect(installation.status == 200, "\(installation.text)")
            let second = try await server.send(
                format: "apple", Self.body(#"{"timestamp":\#(Self.now + 1),"event":"update","content-state":{"home":2,"away":0}}"#),
                tags: "match-42", headers: Self.headers)
            #expect(HubAPISendTests.count(try await server.finishedDetails(try server.acceptedID(second)), "ApnsOutcomeCounts") == 1)
            current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.contentState?["home"] == .number(2))

            // The end, with a dismissal date; no content state is needed.
            let dismissAt = Self.now + 900
            let end = try await server.send(
                format: "apple", Self.body(#"{"timestamp":\#(Self.now + 2),"event":"end","dismissal-date":\#(dismissAt)}"#),
                tags: "match-42", headers: Self.headers)
            #expect(HubAPISendTests.count(try await server.finishedDetails(try server.acceptedID(end)), "ApnsOutcomeCounts") == 1)
            current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.state == .ended)
            #expect(current.dismissalDate == Date(timeIntervalSince1970: TimeInterval(dismissAt)))
            #expect(herald.apns.notifications(for: updateToken).count == 3)
            #expect(herald.apns.notifications(for: updateToken).allSatisfy { $0.headers["apns-topic"] == Self.liveActivityTopic })

            // An alert to the fans reaches the fan's device only: none of the activity tokens
            // under the tag, which APNs would refuse (DeviceTokenNotForTopic).
            let alert = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"Full time"}}"#, tags: "fans-lions"))
            let alerted = try await server.finishedDetails(alert)
            #expect(HubAPISendTests.count(alerted, "ApnsOutcomeCounts") == 1)
            #expect(alerted.child("ApnsOutcomeCounts")?.children("Outcome").count == 1, "only the device's Success")
            #expect(herald.apns.notifications(for: phone).count == 1)
            #expect(herald.apns.notifications(for: startToken).count == 1)
            #expect(herald.apns.notifications(for: updateToken).count == 3)
        }
    }

    /// Each payload APNs would refuse: `400` with the field named, before anything is accepted.
    @Test func invalidLiveActivityPayloadsAreRefusedNamingTheField() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let activity = try herald.apns.startActivity(topic: TestHerald.topic, attributesType: "MatchAttributes")
            let token = try #require(activity.updateToken)
            let now = Self.now
            let cases: [(aps: String, headers: [(String, String)], field: String)] = [
                (#"{"event":"update","content-state":{}}"#, [], "aps.timestamp"),
                (#"{"timestamp":1.5,"event":"update","content-state":{}}"#, [], "aps.timestamp"),
                (#"{"timestamp":"\#(now)","event":"update","content-state":{}}"#, [], "aps.timestamp"),
                (#"{"timestamp":\#(now),"content-state":{}}"#, [], "aps.event"),
                (#"{"timestamp":\#(now),"event":"pause","content-state":{}}"#, [], "aps.event"),
                (#"{"timestamp":\#(now),"event":"update"}"#, [], "aps.content-state"),
                (#"{"timestamp":\#(now),"event":"update","content-state":"x"}"#, [], "aps.content-state"),
                (#"{"timestamp":\#(now),"event":"update","content-state":{},"stale-date":"soon"}"#, [], "aps.stale-date"),
                (#"{"timestamp":\#(now),"event":"end","dismissal-date":-5}"#, [], "aps.dismissal-date"),
                (#"{"timestamp":\#(now),"event":"update","content-state":{},"relevance-score":"high"}"#, [], "aps.relevance-score"),
                (#"{"timestamp":\#(now),"event":"start","content-state":{},"attributes":{},"alert":"Go"}"#, [], "aps.attributes-type"),
                (#"{"timestamp":\#(now),"event":"start","content-state":{},"attributes-type":"MatchAttributes","alert":"Go"}"#, [], "aps.attributes"),
                (#"{"timestamp":\#(now),"event":"start","content-state":{},"attributes-type":"MatchAttributes","attributes":{}}"#, [], "aps.alert"),
                (#"{"timestamp":\#(now),"event":"update","content-state":{}}"#, [("apns-priority", "1")], "apns-priority"),
                (#"{"timestamp":\#(now),"event":"update","content-state":{}}"#, [("apns-topic", TestHerald.topic)], "apns-topic"),
            ]
            for (aps, headers, field) in cases {
                let response = try await server.send(
                    format: "apple", Self.body(aps), query: "&direct",
                    headers: [("apns-push-type", "liveactivity"), ("ServiceBusNotification-DeviceHandle", token)] + headers)
                let detail = expectHubError(response, 400)
                #expect(detail.contains(field), "\(aps): \(detail)")
            }
            // Too large for APNs.
            let large = Self.body(#"{"timestamp":\#(now),"event":"update","content-state":{"text":"\#(String(repeating: "x", count: 4100))"}}"#)
            let tooLarge = try await server.send(
                format: "apple", large, query: "&direct",
                headers: [("apns-push-type", "liveactivity"), ("ServiceBusNotification-DeviceHandle", token)])
            expectHubError(tooLarge, 413)
            // To a tag as well: refused before any device is looked up.
            expectHubError(
                try await server.send(format: "apple", Self.body(#"{"event":"update"}"#), tags: "anyone", headers: Self.headers), 400)
            #expect(herald.apns.notifications(for: token).isEmpty)
            #expect(herald.apns.activity(id: activity.id)?.received.isEmpty == true)
        }
    }
}
