public import Foundation
public import HeraldCore
import Synchronization

/// What an engine remembers of its recent deliveries, for an operator's pages: the last
/// outcomes of each device it sent to, and how the number of devices reached grew over time
/// for each recent notification. It lives in memory, in this process only, within fixed
/// bounds (older entries are forgotten first); the store keeps no per-device history.
public final class DeliveryLog: Sendable {
    /// One outcome of one device.
    public struct Entry: Sendable, Hashable {
        public var notificationID: String
        public var outcome: DeliveryOutcome
        public var at: Date
    }

    /// A notification's devices reached so far, at one moment: in all, and per platform.
    public struct Sample: Sendable, Hashable {
        public var at: Date
        public var perPlatform: [Platform: Int]
        public var reached: Int { perPlatform.values.reduce(0, +) }
    }

    private struct Progress {
        /// The latest counts of each part (the whole notification's own id for the first).
        var parts: [String: [Platform: Int]] = [:]
        var samples: [Sample] = []
    }

    private struct State {
        /// Two generations of per-device outcomes: when the current one is full, it becomes
        /// the previous one and the oldest is dropped, so a lookup finds what either holds.
        var current: [String: [Entry]] = [:]
        var previous: [String: [Entry]] = [:]
        var progress: [String: Progress] = [:]
        /// Notifications in the order they were first seen, to forget the oldest.
        var order: [String] = []
    }

    private let state = Mutex(State())
    /// Devices per generation.
    let devicesPerGeneration: Int
    /// Outcomes kept per device.
    static let entriesPerDevice = 5
    /// Notifications whose progress is kept, and samples per notification.
    static let notificationsKept = 200
    static let samplesPerNotification = 240

    public init(devicesPerGeneration: Int = 50_000) {
        self.devicesPerGeneration = devicesPerGeneration
    }

    /// Records the outcomes of one page of a notification (`partOf` its whole one, if a part).
    func record(notification: String, outcomes: [(registrationID: String, outcome: DeliveryOutcome)], at: Date = Date()) {
        guard !outcomes.isEmpty else { return }
        state.withLock { state in
            // One lookup of each device in the current generation, whose entries are changed in
            // place; the previous generation is read only for a device the current one lacks.
            var current = state.current
            state.current = [:]
            let previous = state.previous
            for (id, outcome) in outcomes {
                Self.prepend(
                    Entry(notificationID: notification, outcome: outcome, at: at),
                    to: &current[id, default: previous.isEmpty ? [] : previous[id] ?? []])
            }
            if current.count >= devicesPerGeneration {
                state.previous = current
                // Room for a whole generation at once, rather than growing to it step by step.
                state.current = Dictionary(minimumCapacity: devicesPerGeneration)
            } else {
                state.current = current
            }
        }
    }

    private static func prepend(_ entry: Entry, to entries: inout [Entry]) {
        if entries.count >= entriesPerDevice { entries.removeLast(entries.count - entriesPerDevice + 1) }
        entries.insert(entry, at: 0)
    }

    /// Records the devices a notification (or its part `part`) has reached so far.
    func recordProgress(notification: String, part: String, counts: OutcomeCounts, at: Date = Date()) {
        recordProgress(notification: notification, part: part, reached: counts.counts.mapValues { $0.values.reduce(0, +) }, at: at)
    }

    func recordProgress(notification: String, part: String, reached: [Platform: Int], at: Date = Date()) {
        state.withLock { state in
            if state.progress[notification] == nil {
                state.order.append(notification)
                if state.order.count > Self.notificationsKept {
                    state.progress[state.order.removeFirst()] = nil
                }
            }
            var progress = state.progress[notification] ?? Progress()
            progress.parts[part] = reached
            let sum = progress.parts.values.reduce(into: [Platform: Int]()) { sum, part in sum.merge(part, uniquingKeysWith: +) }
            progress.samples.append(Sample(at: at, perPlatform: sum))
            if progress.samples.count > Self.samplesPerNotification { progress.samples.removeFirst() }
            state.progress[notification] = progress
        }
    }

    /// The latest outcomes of a registration, newest first.
    public func outcomes(registrationID: String) -> [Entry] {
        state.withLock { $0.current[registrationID] ?? $0.previous[registrationID] ?? [] }
    }

    /// How a notification's devices reached grew, oldest first.
    public func progress(notificationID: String) -> [Sample] {
        state.withLock { $0.progress[notificationID]?.samples ?? [] }
    }
}
