import Foundation
import HTTPTypes
import HeraldServer
import HummingbirdTesting
import Testing

/// The console's limits on an operator's session: guesses of the current password when
/// changing it, and the idle timeout.
@Suite struct ConsoleLimitsTests {
    /// Someone at a signed-in console cannot guess the current password without end: after 10
    /// wrong ones, the change is refused with 429 and Retry-After, the right password too.
    @Test func guessesOfTheCurrentPasswordAreLimited() async throws {
        try await ConsoleTests.withConsole { _, _, browser, _ in
            for attempt in 1...10 {
                let wrong = try await browser.post("/console/password", ["current": "guess number \(attempt)", "new": "another long password"])
                #expect(wrong.status == .badRequest, "attempt \(attempt)")
                #expect(wrong.body.contains("the current password is wrong"))
            }
            let refused = try await browser.post("/console/password", ["current": "a long new password", "new": "another long password"])
            #expect(refused.status == .tooManyRequests)
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(refused.body.contains("too many failed sign-ins"))
        }
    }

    /// A session used within the idle timeout lives on; one left unused longer ends, and the
    /// operator signs in again.
    @Test func anIdleSessionEnds() async throws {
        try await ConsoleTests.withConsole { herald, _, browser, _ in
            herald.clock.advance(by: .seconds(20 * 60))
            #expect(try await browser.get("/console/hubs").status == .ok)
            herald.clock.advance(by: .seconds(20 * 60))
            #expect(try await browser.get("/console/hubs").status == .ok, "40 minutes after sign-in, 20 after the last use")
            herald.clock.advance(by: .seconds(31 * 60))
            let page = try await browser.get("/console/hubs")
            #expect(page.status == .seeOther)
            #expect(page.location == "/console/sign-in")
            #expect(try await browser.post("/console/hubs", ["name": "late"]).status == .unauthorized)
            #expect(try await browser.signIn("root", "a long new password").location == "/console/hubs")
        }
    }
}
