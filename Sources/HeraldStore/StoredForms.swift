package import Foundation
package import HeraldCore

// The forms in which every store keeps values, so that what one store writes another reads
// the same way (and `herald store copy` moves it unchanged).

extension Date {
    /// Milliseconds since 1970, as the stores keep dates. Clamped to ±2⁵³ so that any `Date`
    /// (even `distantFuture` or a non-finite interval) can be stored.
    package var storeMilliseconds: Int {
        let ms = (timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite else { return ms > 0 ? 1 << 53 : -(1 << 53) }
        return Int(min(max(ms, -9_007_199_254_740_992), 9_007_199_254_740_992))
    }

    package init(storeMilliseconds ms: Int) {
        self.init(timeIntervalSince1970: Double(ms) / 1000)
    }

    /// This date as it reads back from a store (rounded to the millisecond).
    package var storeRounded: Date { Date(storeMilliseconds: storeMilliseconds) }
}

extension Duration {
    /// Whole milliseconds, saturating.
    package var storeMilliseconds: Int {
        let ms = wholeMilliseconds
        guard ms != .max, ms != .min else { return ms < 0 ? Int.min / 2 : Int.max / 2 }
        return Int(ms)
    }
}

/// The JSON that stores keep in text columns: compact, keys sorted, so that the same value is
/// always stored the same way.
package enum StoredJSON {
    package static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// `nil` if `text` is not valid JSON of `T`.
    package static func decode<T: Decodable>(_ type: T.Type, from text: String) -> T? {
        try? JSONDecoder().decode(T.self, from: Data(text.utf8))
    }
}

/// A registration as a store keeps it: tags unique and sorted, dates to the millisecond, the
/// template and push variables as JSON (`nil` for none).
package struct StoredRegistration: Sendable {
    /// The registration as it reads back from the store.
    package var registration: Registration
    package var templateJSON: String?
    package var pushVariablesJSON: String?

    /// Normalizes `registration` for storage, with the given timestamps.
    package init(_ registration: Registration, createdAt: Date, updatedAt: Date) throws {
        var normalized = registration
        normalized.tags = Array(Set(registration.tags)).sorted()
        normalized.expiresAt = registration.expiresAt?.storeRounded
        normalized.createdAt = createdAt.storeRounded
        normalized.updatedAt = updatedAt.storeRounded
        self.registration = normalized
        self.templateJSON = try normalized.template.map(StoredJSON.encode)
        self.pushVariablesJSON = normalized.pushVariables.isEmpty ? nil : try StoredJSON.encode(normalized.pushVariables)
    }
}

/// What a store keeps of an installation besides its id, user id, own tags, version and
/// dates: one JSON document.
///
/// It is Herald's storage form, not the hub API's wire form: it changes only with a migration,
/// whatever the API does. Its own types throughout, so that a change to the model's `Codable`
/// forms cannot change what is stored.
package struct StoredInstallationDocument: Codable, Sendable {
    package struct Template: Codable, Sendable {
        var body: String
        var headers: [String: String]
        var expiry: String?
        var tags: [String]
    }

    var platform: String
    var legacyGCM: Bool
    var pushChannel: String
    /// ``HandleKind/storedValue``: absent for a device's channel.
    var pushChannelKind: String?
    var p256dh: String?
    var auth: String?
    var templates: [String: Template]
    var pushVariables: [String: String]
    /// Milliseconds since 1970, as the stores keep dates.
    var expirationTime: Int?
    /// Set by a store when the channel expires (the SQLite store with `json_set`): keep the name.
    var pushChannelExpired: Bool

    /// The name of the field that marks an expired channel, for stores that set it in SQL.
    package static let pushChannelExpiredField = "pushChannelExpired"

    package init(_ installation: Installation) {
        platform = installation.platform.rawValue
        legacyGCM = installation.legacyGCM
        pushChannel = installation.pushChannel
        pushChannelKind = installation.pushChannelKind.storedValue
        p256dh = installation.webPushKeys?.p256dh
        auth = installation.webPushKeys?.auth
        templates = installation.templates.mapValues {
            Template(body: $0.body, headers: $0.headers, expiry: $0.expiry, tags: $0.tags)
        }
        pushVariables = installation.pushVariables
        expirationTime = installation.expirationTime?.storeMilliseconds
        pushChannelExpired = installation.pushChannelExpired
    }

    /// The installation with this document and the given columns; `nil` if the document names
    /// an unknown platform.
    package func installation(
        id: String, userId: String?, tags: [String], version: Int, createdAt: Date, updatedAt: Date
    ) -> Installation? {
        guard let platform = Platform(rawValue: platform) else { return nil }
        let keys: WebPushKeys? =
            switch (p256dh, auth) {
            case (let p256dh?, let auth?): WebPushKeys(p256dh: p256dh, auth: auth)
            default: nil
            }
        return Installation(
            id: id,
            platform: platform,
            legacyGCM: legacyGCM,
            pushChannel: pushChannel,
            pushChannelKind: HandleKind(storedValue: pushChannelKind),
            webPushKeys: keys,
            userId: userId,
            tags: tags,
            templates: templates.mapValues {
                InstallationTemplate(body: $0.body, headers: $0.headers, expiry: $0.expiry, tags: $0.tags)
            },
            pushVariables: pushVariables,
            expirationTime: expirationTime.map(Date.init(storeMilliseconds:)),
            pushChannelExpired: pushChannelExpired,
            version: version,
            createdAt: createdAt,
            updatedAt: updatedAt
        )
    }
}

extension Installation {
    /// This installation as a store keeps it: dates to the millisecond, with the given version
    /// and timestamps.
    package func stored(version: Int, createdAt: Date, updatedAt: Date) -> Installation {
        var normalized = self
        normalized.expirationTime = expirationTime?.storeRounded
        normalized.version = version
        normalized.createdAt = createdAt.storeRounded
        normalized.updatedAt = updatedAt.storeRounded
        return normalized
    }
}

/// When a store last swept its expired reservations and sessions: at most once a minute per
/// kind, piggybacked on a write of the same kind.
package struct Housekeeping: Sendable {
    static let interval = 60_000
    package var lastReservationSweep: Int?
    package var lastSessionSweep: Int?

    package init() {}

    /// Whether a sweep is due at `now` (milliseconds), and records it if so.
    package static func due(_ last: inout Int?, now: Int) -> Bool {
        if let previous = last, now - previous < interval, now >= previous { return false }
        last = now
        return true
    }
}

extension Registration {
    /// `registrations` in id order, a repeated id in the order given: how a store inserts a
    /// batch, so that neighbouring rows land in neighbouring index pages.
    package static func inInsertOrder(_ registrations: [Registration]) -> [Registration] {
        registrations.enumerated()
            .sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }
            .map(\.element)
    }
}

/// The ids of registrations derived from installations: they all start with
/// ``Installation/registrationIDPrefix``, so they form one range of the id order (compared as
/// bytes), which a listing of registrations reads around.
package enum DerivedRegistrationIDs {
    /// The range's first id.
    package static let start = Installation.registrationIDPrefix
    /// The first id after the range: the prefix with its last byte + 1.
    package static let end: String = {
        var bytes = Array(Installation.registrationIDPrefix.utf8)
        bytes[bytes.count - 1] += 1
        return String(decoding: bytes, as: UTF8.self)
    }()

    /// Whether a listing that resumes after `cursor` has ids before the range left to read.
    package static func hasIDsBefore(cursor: String?) -> Bool {
        cursor.map { $0.utf8.lexicographicallyPrecedes(start.utf8) } ?? true
    }

    /// Whether a listing that resumes after `cursor` reads the ids after the range from the
    /// range's end (`true`) or from the cursor (`false`).
    package static func resumesAtEnd(cursor: String?) -> Bool {
        cursor.map { $0.utf8.lexicographicallyPrecedes(end.utf8) } ?? true
    }
}

extension NotificationRecord {
    /// The id of partition `index` (1, 2, …) of the notification `id`.
    package static func partitionID(of id: String, index: Int) -> String { "\(id).\(index)" }

    /// The checks of ``NotificationStore/splitNotification(id:owner:at:)`` on the claimed record:
    /// `nil` when `boundaries` may split it, otherwise what is wrong.
    package func splitRefusal(at boundaries: [String]) -> String? {
        guard partOf == nil else { return "a partition is not split again" }
        guard upperBound == nil else { return "the notification was split already" }
        guard directTargets == nil else { return "a direct send is not split" }
        guard let first = boundaries.first else { return "a split needs at least one boundary" }
        if let cursor, !cursor.utf8.lexicographicallyPrecedes(first.utf8) {
            return "the boundaries must lie after the notification's cursor"
        }
        for (lower, upper) in zip(boundaries, boundaries.dropFirst()) where !lower.utf8.lexicographicallyPrecedes(upper.utf8) {
            return "the boundaries must ascend strictly"
        }
        return nil
    }

    /// The partitions that split this claimed record at `boundaries` (checked with
    /// ``splitRefusal(at:)``), enqueued: each with the same payloads and times, its cursor at one
    /// boundary and its upper bound at the next (the last one open).
    package func partitions(at boundaries: [String]) -> [NotificationRecord] {
        boundaries.indices.map { i in
            var partition = self
            partition.id = Self.partitionID(of: id, index: i + 1)
            partition.partOf = id
            partition.state = .enqueued
            partition.counts = OutcomeCounts()
            partition.cursor = boundaries[i]
            partition.upperBound = i + 1 < boundaries.count ? boundaries[i + 1] : nil
            partition.startedAt = nil
            partition.endedAt = nil
            return partition
        }
    }

    /// This notification as its senders see it, given its partitions: the counts of all added
    /// up; processing while any has not ended; once all have, abandoned if one was, no target
    /// found if none had a device, completed otherwise, ended when the last one ended.
    package func combined(withPartitions partitions: [NotificationRecord]) -> NotificationRecord {
        guard !partitions.isEmpty else { return self }
        var whole = self
        for partition in partitions { whole.counts.merge(partition.counts) }
        let all = [self] + partitions
        if all.allSatisfy(\.state.isFinal) {
            if all.contains(where: { $0.state == .abandoned }) {
                whole.state = .abandoned
            } else {
                whole.state = whole.counts.total == 0 ? .noTargetFound : .completed
            }
            whole.endedAt = all.compactMap(\.endedAt).max()
        } else {
            whole.state = .processing
            whole.endedAt = nil
        }
        whole.cursor = nil
        whole.upperBound = nil
        return whole
    }
}
