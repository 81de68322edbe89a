import Foundation
import HeraldCore

extension PlatformPayload {
    /// This payload with a send's options as its platform's own headers, where it does not
    /// set them itself: the time to live as Web Push `TTL`, WNS `X-WNS-TTL` or APNs
    /// `apns-expiration` (unix seconds, from `now`), the urgency as Web Push `Urgency`. An FCM
    /// payload keeps its message as it is.
    func applying(_ options: SendRequest.Options, now: Date = Date()) -> PlatformPayload {
        let present = Set(headers.map { $0.name.lowercased() })
        var payload = self
        if let timeToLive = options.timeToLive {
            let seconds = Int(timeToLive.components.seconds)
            switch platform {
            case .webpush where !present.contains("ttl"):
                payload.headers.append(Header(name: "TTL", value: String(seconds)))
            case .wns where !present.contains("x-wns-ttl"):
                payload.headers.append(Header(name: "X-WNS-TTL", value: String(seconds)))
            case .apns where !present.contains("apns-expiration"):
                payload.headers.append(Header(name: "apns-expiration", value: String(Int(now.timeIntervalSince1970) + seconds)))
            default:
                break
            }
        }
        if platform == .webpush, !present.contains("urgency"), let urgency = options.urgency {
            payload.headers.append(Header(name: "Urgency", value: urgency.lowercased()))
        }
        return payload
    }
}
