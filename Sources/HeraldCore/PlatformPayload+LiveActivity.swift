import Foundation

extension PlatformPayload {
    /// The topic suffix of Live Activity pushes: `<bundle id>.push-type.liveactivity`.
    package static let liveActivityTopicSuffix = ".push-type.liveactivity"

    /// Whether this is an APNs Live Activity push (`apns-push-type: liveactivity`).
    package var isLiveActivity: Bool {
        platform == .apns
            && headers.last { $0.name.lowercased() == "apns-push-type" }?.value.trimmingSpaces()
                .lowercased() == "liveactivity"
    }

    /// Checks a Live Activity push as APNs and ActivityKit read it, so that a sender gets a
    /// `400` naming the field instead of a push the device drops:
    ///
    /// - the body is a JSON object with an `aps` object;
    /// - `aps.timestamp` (required): whole seconds since 1970;
    /// - `aps.event` (required): `start`, `update` or `end`;
    /// - `aps.content-state`: an object, required for `start` and `update`;
    /// - `aps.stale-date`, `aps.dismissal-date`: whole seconds since 1970 when present;
    /// - `aps.relevance-score`: a number; `aps.alert`: a string or an object;
    /// - a `start` (push-to-start) also needs `aps.attributes-type` (the activity's
    ///   attributes type name), an `aps.attributes` object and an `aps.alert`;
    ///   `aps.input-push-channel`, when present, is a channel id;
    /// - `apns-priority`, when present, is `10` or `5` (Apple takes no other for Live
    ///   Activities); `apns-topic`, when present, ends with `.push-type.liveactivity`;
    /// - at most ``PayloadLimits/apns`` bytes, or ``PayloadLimits/apnsBroadcast`` for a
    ///   `broadcast` to a channel.
    ///
    /// Does nothing for other payloads.
    package func checkLiveActivity(broadcast: Bool = false) throws(HeraldError) {
        guard isLiveActivity else { return }
        try PayloadLimits.checkAPNs(byteCount: body.count, broadcast: broadcast)
        for header in headers {
            switch header.name.lowercased() {
            case "apns-priority":
                let value = header.value.trimmingSpaces()
                guard value == "10" || value == "5" else {
                    throw .badRequest("apns-priority of a Live Activity push must be 10 or 5, not '\(header.value)'")
                }
            case "apns-topic":
                guard header.value.hasSuffix(Self.liveActivityTopicSuffix) else {
                    throw .badRequest(
                        "apns-topic of a Live Activity push must be '<bundle id>\(Self.liveActivityTopicSuffix)' (or left out: the hub adds it), not '\(header.value)'"
                    )
                }
            default:
                break
            }
        }
        guard let json = try? JSONValue(parsing: body), case .object = json,
            let aps = json["aps"], case .object = aps
        else {
            throw .badRequest("a Live Activity push must be a JSON object with an aps object")
        }
        guard let timestamp = aps["timestamp"] else {
            throw .badRequest("aps.timestamp is required in a Live Activity push: the time of this state, in whole seconds since 1970")
        }
        guard Self.isWholeSeconds(timestamp) else {
            throw .badRequest("aps.timestamp must be whole seconds since 1970, not \(Self.shown(timestamp))")
        }
        guard let eventValue = aps["event"] else {
            throw .badRequest("aps.event is required in a Live Activity push: start, update or end")
        }
        guard case .string(let event) = eventValue, ["start", "update", "end"].contains(event) else {
            throw .badRequest("aps.event must be start, update or end, not \(Self.shown(eventValue))")
        }
        switch aps["content-state"] {
        case .object?: break
        case nil where event == "end": break
        case nil: throw .badRequest("aps.content-state is required for event \(event): the activity's ContentState as a JSON object")
        case let other?: throw .badRequest("aps.content-state must be a JSON object, not \(Self.shown(other))")
        }
        for key in ["stale-date", "dismissal-date"] {
            if let date = aps[key], !Self.isWholeSeconds(date) {
                throw .badRequest("aps.\(key) must be whole seconds since 1970, not \(Self.shown(date))")
            }
        }
        if let score = aps["relevance-score"] {
            guard case .number(let value) = score, value.isFinite else {
                throw .badRequest("aps.relevance-score must be a number, not \(Self.shown(score))")
            }
        }
        switch aps["alert"] {
        case nil, .string?, .object?: break
        case let other?: throw .badRequest("aps.alert must be a string or an object, not \(Self.shown(other))")
        }
        guard event == "start" else { return }
        guard case .string(let type)? = aps["attributes-type"], !type.isEmpty else {
            throw .badRequest("aps.attributes-type is required for event start: the name of the activity's ActivityAttributes type")
        }
        guard case .object? = aps["attributes"] else {
            throw .badRequest("aps.attributes is required for event start: the activity's attributes as a JSON object")
        }
        guard aps["alert"] != nil else {
            throw .badRequest("aps.alert is required for event start: APNs shows it when the activity starts")
        }
        if let channel = aps["input-push-channel"] {
            guard case .string(let id) = channel, !id.isEmpty else {
                throw .badRequest("aps.input-push-channel must be a broadcast channel id, not \(Self.shown(channel))")
            }
        }
    }

    /// A non-negative whole number below 10^11 (JSON has one number type: 12.0 passes, 12.5 does not).
    private static func isWholeSeconds(_ value: JSONValue) -> Bool {
        guard case .number(let number) = value else { return false }
        return number >= 0 && number < 1e11 && number == number.rounded(.towardZero)
    }

    /// A value as a message shows it: short JSON text.
    private static func shown(_ value: JSONValue) -> String {
        let text = (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        return text.count > 40 ? String(text.prefix(40)) + "…" : text
    }
}
