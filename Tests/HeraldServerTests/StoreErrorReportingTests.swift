import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import Testing

/// One store error type, two kinds of codes: the contract's terms each answer with their own
/// status; a store's own failure (it cannot open or reach its database, a newer schema, a
/// database error, corrupt data) is an internal error, as it was when each store had its own type.
@Suite struct StoreErrorReportingTests {
    @Test(arguments: [StoreError.Code.cannotOpen, .cannotConnect, .schemaTooNew, .database, .corruptData])
    func aStoresOwnFailureIsAnInternalError(_ code: StoreError.Code) {
        let error = StoreError(code: code, message: "the database failed (XX000)")
        #expect(error.isInternal)
        #expect(HeraldError(reporting: error) == nil)
        #expect(HeraldError.answering(error) == nil)
        #expect(error.status == .internalServerError)
    }

    @Test func theContractsTermsKeepTheirStatuses() {
        let expected: [(StoreError, Int)] = [
            (.leaseLost("n-1", state: "finished"), 409),
            (.hubNameTaken("orders"), 409),
            (.databaseUnavailable("the database is busy; try again"), 503),
            (.storageFull, 507),
            (.idempotencyKeyReused("k-1"), 422),
        ]
        for (error, status) in expected {
            #expect(!error.isInternal)
            #expect(HeraldError(reporting: error)?.code.httpStatus == status, "\(error)")
            #expect(HeraldError(reporting: error)?.message == error.message)
            #expect(HeraldError.answering(error) != nil)
            #expect(error.status.code == status)
        }
    }
}
