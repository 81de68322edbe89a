import Foundation
import HeraldCore
import NIOCore

/// The `aps` of a Live Activity push (`apns-push-type: liveactivity`), checked as ActivityKit
/// reads it: `timestamp` (whole seconds) and `event` always; `content-state` for `start` and
/// `update`; `attributes-type`, `attributes` and an `alert` for `start`; whole-second
/// `stale-date` and `dismissal-date` and a numeric `relevance-score` when present.
struct LiveActivityPayload {
    enum Event: String {
        case start, update, end
    }

    var event: Event
    var timestamp: Int
    var contentState: JSONValue?
    var staleDate: Int?
    var dismissalDate: Int?
    var relevanceScore: Double?
    var attributesType: String?
    var attributes: JSONValue?
    /// `input-push-channel`: a push-to-start that subscribes the new activity to this channel.
    var inputPushChannel: String?

    /// What is wrong with a payload, for the log (APNs answers with a reason only).
    struct Invalid: Error {
        var message: String
    }

    static func parse(_ body: ByteBuffer) -> Result<LiveActivityPayload, Invalid> {
        guard let value = try? JSONValue(parsing: body.readableBytesView) else {
            return .failure(Invalid(message: "the payload is not JSON"))
        }
        guard case .object = value, let aps = value["aps"], case .object = aps else {
            return .failure(Invalid(message: "the payload has no aps object"))
        }
        guard let timestamp = wholeSeconds(aps["timestamp"]) else {
            return .failure(Invalid(message: "aps.timestamp must be whole seconds since 1970"))
        }
        guard case .string(let name) = aps["event"], let event = Event(rawValue: name) else {
            return .failure(Invalid(message: "aps.event must be start, update or end"))
        }
        var payload = LiveActivityPayload(event: event, timestamp: timestamp)
        switch aps["content-state"] {
        case .none where event == .end: break
        case .some(let state) where state.isObject: payload.contentState = state
        default: return .failure(Invalid(message: "aps.content-state must be an object"))
        }
        let dates: [(String, WritableKeyPath<LiveActivityPayload, Int?>)] = [
            ("stale-date", \.staleDate), ("dismissal-date", \.dismissalDate),
        ]
        for (key, keyPath) in dates {
            guard let date = aps[key] else { continue }
            guard let seconds = wholeSeconds(date) else {
                return .failure(Invalid(message: "aps.\(key) must be whole seconds since 1970"))
            }
            payload[keyPath: keyPath] = seconds
        }
        if let score = aps["relevance-score"] {
            guard case .number(let value) = score, value.isFinite else {
                return .failure(Invalid(message: "aps.relevance-score must be a number"))
            }
            payload.relevanceScore = value
        }
        if let alert = aps["alert"] {
            switch alert {
            case .string, .object: break
            default: return .failure(Invalid(message: "aps.alert must be a string or an object"))
            }
        }
        if event == .start {
            guard case .string(let type) = aps["attributes-type"], !type.isEmpty else {
                return .failure(Invalid(message: "a start needs aps.attributes-type"))
            }
            guard let attributes = aps["attributes"], attributes.isObject else {
                return .failure(Invalid(message: "a start needs an aps.attributes object"))
            }
            guard aps["alert"] != nil else {
                return .failure(Invalid(message: "a start needs an aps.alert"))
            }
            payload.attributesType = type
            payload.attributes = attributes
            if let channel = aps["input-push-channel"] {
                guard case .string(let id) = channel, !id.isEmpty else {
                    return .failure(Invalid(message: "aps.input-push-channel must be a channel id"))
                }
                payload.inputPushChannel = id
            }
        }
        return .success(payload)
    }

    private init(event: Event, timestamp: Int) {
        self.event = event
        self.timestamp = timestamp
    }

    /// A non-negative whole number of seconds (JSON has one number type: 12.0 passes, 12.5 does not).
    private static func wholeSeconds(_ value: JSONValue?) -> Int? {
        guard case .number(let number) = value, number >= 0, number < 1e11, number == number.rounded(.towardZero) else {
            return nil
        }
        return Int(number)
    }
}

extension JSONValue {
    fileprivate var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}
