import HeraldCore
import HeraldPush
import Instrumentation
import ServiceContextModule
import Tracing

/// The engine's spans: `notification.accept` when a notification is stored,
/// `notification.deliver` when a worker delivers it (or a partition of it), `delivery.page` for
/// each page of devices, and `push.send` for each request to a push service, made only when the
/// page's span is sampled (a broadcast is tens of thousands of them).
///
/// A notification keeps the W3C `traceparent` of its `notification.accept` span
/// (``NotificationRecord/traceContext``), and its delivery's span is a child of that context:
/// one trace runs from the request that accepted it to every push, whichever node delivers it.
///
/// Spans carry counts, platforms, outcomes, statuses and ids only: never a device's handle, a
/// tag, a user name, a payload or a key. Without a tracer set up (`InstrumentationSystem`'s
/// default is a no-op) each span costs a call, and no traceparent is stored.
extension HubEngine {
    /// The traceparent of `context` as the process's instrument writes it; `nil` when it writes
    /// none (no tracer set up).
    static func traceparent(of context: ServiceContext) -> String? {
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: TraceCarrier())
        return carrier["traceparent"]
    }

    /// The context a stored traceparent names, for the spans of a delivery; a top-level context
    /// when there is none (or no tracer to read it).
    static func context(fromTraceparent traceparent: String?) -> ServiceContext {
        var context = ServiceContext.topLevel
        if let traceparent {
            InstrumentationSystem.instrument.extract(["traceparent": traceparent], into: &context, using: TraceCarrier())
        }
        return context
    }

    /// The attributes of a `delivery.page` span: how many devices, and how many of them ended in
    /// each outcome (`herald.outcome.Success`, …).
    static func recordPage(_ span: any Span, devices: Int, outcomes: OutcomeCounts) {
        var totals: [String: Int] = [:]
        for (_, perOutcome) in outcomes.counts {
            for (outcome, count) in perOutcome where count > 0 { totals[outcome.rawValue, default: 0] += count }
        }
        span.updateAttributes { attributes in
            attributes["herald.devices"] = devices
            for (outcome, count) in totals { attributes["herald.outcome.\(outcome)"] = count }
        }
    }

    /// A `push.send` span for one request to a push service, when `context` (a sampled page's)
    /// is given; `nil` otherwise.
    static func startPushSpan(in context: ServiceContext?, platform: Platform, attempt: Int) -> (any Span)? {
        guard let context else { return nil }
        let span = startSpan("push.send", context: context, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["herald.platform"] = platform.rawValue
            attributes["herald.attempt"] = attempt
        }
        return span
    }

    /// Ends a `push.send` span with what the push service answered.
    static func endPushSpan(_ span: (any Span)?, result: PushResult) {
        guard let span else { return }
        span.updateAttributes { attributes in
            attributes["herald.outcome"] = result.outcome.rawValue
            if let status = result.status { attributes["http.response.status_code"] = status }
        }
        span.end()
    }
}

/// Reads and writes trace headers in a dictionary.
struct TraceCarrier: Injector, Extractor {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }

    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
