package tracing

import "go.opentelemetry.io/otel/attribute"

// The attributes of the OpenTelemetry GenAI semantic conventions that
// agentfleet writes. The Go module of the conventions no longer carries
// them since semconv v1.42.0 (they moved to a repository of their own), so
// they are defined here, as the conventions name them.
const (
	GenAIOperationName         = attribute.Key("gen_ai.operation.name")
	GenAIProviderName          = attribute.Key("gen_ai.provider.name")
	GenAIAgentName             = attribute.Key("gen_ai.agent.name")
	GenAIConversationID        = attribute.Key("gen_ai.conversation.id")
	GenAIRequestModel          = attribute.Key("gen_ai.request.model")
	GenAIResponseModel         = attribute.Key("gen_ai.response.model")
	GenAIResponseID            = attribute.Key("gen_ai.response.id")
	GenAIResponseFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	GenAIUsageInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	GenAIToolName              = attribute.Key("gen_ai.tool.name")
	GenAIToolType              = attribute.Key("gen_ai.tool.type")
	GenAIToolCallID            = attribute.Key("gen_ai.tool.call.id")
	GenAIToolCallArguments     = attribute.Key("gen_ai.tool.call.arguments")
	GenAIToolCallResult        = attribute.Key("gen_ai.tool.call.result")

	// ErrorType is the general convention's error.type: the class of
	// what failed.
	ErrorType = attribute.Key("error.type")
)

// The values of gen_ai.operation.name.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// agentfleet's own attributes, for what the conventions have no name for.
const (
	RunID      = attribute.Key("agentfleet.run.id")
	RunResumed = attribute.Key("agentfleet.run.resumed")
	StopReason = attribute.Key("agentfleet.run.stop_reason")
	Turn       = attribute.Key("agentfleet.turn")
	// Summary marks the model call that writes a summary of the oldest
	// messages (the summarize context strategy).
	Summary      = attribute.Key("agentfleet.summary")
	Orchestrator = attribute.Key("agentfleet.orchestrator.id")
	ToolOutcome  = attribute.Key("agentfleet.tool.outcome")
	ToolAttempt  = attribute.Key("agentfleet.tool.attempt")
	ToolAttempts = attribute.Key("agentfleet.tool.attempts")
	Worker       = attribute.Key("agentfleet.worker.id")
	// QueueWaitMS is the time from the call's arrival at the worker to the
	// start of the tool, and ExecutionMS the time the tool ran.
	QueueWaitMS = attribute.Key("agentfleet.worker.queue_wait_ms")
	ExecutionMS = attribute.Key("agentfleet.worker.execution_ms")
	Decision    = attribute.Key("agentfleet.approval.decision")
	DecisionID  = attribute.Key("agentfleet.approval.decision_id")
	// Reason says why an attempt ended or was sent again.
	Reason = attribute.Key("agentfleet.reason")
)

// The names of span events.
const (
	EventAttempt = "attempt" // a request went to the workers
	EventBusy    = "busy"    // a worker refused the call as busy
	EventRetry   = "retry"   // an attempt (of a tool call, or of a model call) failed, and it is sent again
)
