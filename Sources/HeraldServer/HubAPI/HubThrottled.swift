
/// The hub API's answer to a throttled caller: 429 with `Retry-After`.
package struct HubThrottled: Error {
    var retryAfterSeconds: Int
}
