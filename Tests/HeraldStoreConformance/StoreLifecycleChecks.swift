import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// What a store answers about itself.
enum StoreLifecycleChecks {
    static let all: [StoreCheck] = [
        check("aStoreAnswersPingsUntilItIsClosed") { store, _ in
            try await store.ping()
            try await store.close()
            await #expect(throws: (any Error).self, "a closed store does not pretend to be ready") {
                try await store.ping()
            }
        }
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "lifecycle", name: name, body: body)
    }
}
