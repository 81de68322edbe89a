/// The store contract's conformance suite: every check that a ``HeraldStore`` implementation
/// must pass, written against the store protocols only.
///
/// A store's tests run them all in one parameterized test, each on a new, empty store:
///
/// ```swift
/// @Test(arguments: StoreConformance.checks)
/// func conforms(to check: StoreCheck) async throws {
///     try await check.run { now in try await MyStore.open(…, now: now) }
/// }
/// ```
public enum StoreConformance {
    /// Every check, by area.
    public static let checks: [StoreCheck] =
        RegistrationChecks.all
        + RegistryRuleChecks.all
        + HubRegistrationChecks.all
        + TagExpressionChecks.all
        + InstallationChecks.all
        + NotificationQueueChecks.all
        + IdempotencyChecks.all
        + ReceiptChecks.all
        + AccountChecks.all
        + ContentChecks.all
        + JobChecks.all
        + WebhookChecks.all
        + ConsoleChecks.all
        + StoreLifecycleChecks.all
}
