import Foundation
import HeraldCore
import Testing

@testable import HeraldHub

/// What an engine remembers of recent deliveries for operators: the last outcomes per device,
/// newest first, within bounds; and a notification's progress, its parts added up.
@Suite struct DeliveryLogTests {
    @Test func theLastOutcomesOfADeviceAreKeptNewestFirst() {
        let log = DeliveryLog(devicesPerGeneration: 100)
        for n in 0..<7 {
            log.record(notification: "n\(n)", outcomes: [("reg-1", n == 6 ? .expiredChannel : .success)])
        }
        let entries = log.outcomes(registrationID: "reg-1")
        #expect(entries.count == DeliveryLog.entriesPerDevice)
        #expect(entries.first?.notificationID == "n6")
        #expect(entries.first?.outcome == .expiredChannel)
        #expect(log.outcomes(registrationID: "unknown").isEmpty)
    }

    @Test func oldDevicesAreForgottenFirst() {
        let log = DeliveryLog(devicesPerGeneration: 10)
        for n in 0..<25 { log.record(notification: "n", outcomes: [("reg-\(n)", .success)]) }
        #expect(log.outcomes(registrationID: "reg-0").isEmpty)
        #expect(!log.outcomes(registrationID: "reg-24").isEmpty)
        #expect(!log.outcomes(registrationID: "reg-15").isEmpty)
    }

    @Test func progressAddsUpTheParts() {
        let log = DeliveryLog()
        log.recordProgress(notification: "n", part: "n", reached: [.apns: 100])
        log.recordProgress(notification: "n", part: "n-part-1", reached: [.apns: 40, .fcm: 10])
        log.recordProgress(notification: "n", part: "n", reached: [.apns: 200])
        #expect(log.progress(notificationID: "n").map(\.reached) == [100, 150, 250])
        #expect(log.progress(notificationID: "n").last?.perPlatform == [.apns: 240, .fcm: 10])
        for n in 0..<(DeliveryLog.notificationsKept + 1) { log.recordProgress(notification: "m\(n)", part: "m\(n)", reached: [.wns: 1]) }
        #expect(log.progress(notificationID: "n").isEmpty)
    }
}
