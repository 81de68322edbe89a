import Foundation
import HeraldCore
import HeraldEmulator
import NIOCore
import NIOHPACK
import Testing

@testable import HeraldPush

/// The header blocks the APNs provider builds itself (HTTP/2's own checks of them are off):
/// decoded by the server as sent, request after request on one connection's HPACK tables.
@Suite(.timeLimit(.minutes(2))) struct APNsHeaderBlockTests {
    @Test func everySendOnOneConnectionIsDecodedAsSent() async throws {
        try await APNsHarness.with { harness in
            let devices = (0..<60).map { _ in harness.emulator.registerDevice(topic: APNsHarness.topic) }
            try await harness.withProvider(try harness.configuration(connections: 1)) { provider in
                for (index, device) in devices.enumerated() {
                    let notification = try alert(
                        "n\(index)", headers: [("apns-collapse-id", "c\(index % 7)"), ("APNS-Priority", index % 2 == 0 ? "10" : "5")])
                    #expect(await provider.send(notification, to: PushTarget(handle: device)) == .delivered)
                }
                for (index, device) in devices.enumerated() {
                    let inbox = harness.emulator.notifications(for: device)
                    try #require(inbox.count == 1)
                    #expect(inbox[0].payload == #"{"aps":{"alert":"n\#(index)"}}"#)
                    #expect(inbox[0].headers["apns-topic"] == APNsHarness.topic)
                    #expect(inbox[0].headers["apns-push-type"] == "alert")
                    #expect(inbox[0].headers["apns-collapse-id"] == "c\(index % 7)")
                    #expect(inbox[0].headers["apns-priority"] == (index % 2 == 0 ? "10" : "5"))
                }
            }
        }
    }

    @Test(arguments: [("apns-collapse id", "x"), ("apns-collapse-id", "a\r\nb"), ("apns-(topic)", "x"), ("apns-id", "a\u{0}")])
    func anInvalidHeaderIsRefusedBeforeSending(name: String, value: String) async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider { provider in
                let result = await provider.send(try alert("x", headers: [(name, value)]), to: PushTarget(handle: device))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidNotificationFormat)
                #expect(harness.emulator.acceptedCount == 0)
                // A header that is not an `apns-*` one is not sent, so it is not checked either.
                #expect(await provider.send(try alert("x", headers: [("x-other", "a\nb")]), to: PushTarget(handle: device)) == .delivered)
            }
        }
    }

    @Test func onlyThePathStaysOutOfTheDynamicTable() throws {
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: 8443)
        configuration.usesTLS = true
        let client = try HTTP2Client(configuration: configuration)
        let block = client.headerBlock(path: "/3/device/abcd", reservingCapacity: 1)
        let fields = block.map { ($0.name, $0.value, $0.indexable) }
        #expect(fields.map(\.0) == [":method", ":scheme", ":authority", ":path"])
        #expect(fields.map(\.1) == ["POST", "https", "127.0.0.1:8443", "/3/device/abcd"])
        #expect(fields.map(\.2) == [.indexable, .indexable, .indexable, .nonIndexable])
    }
}
