// Browser-side client tools. Declared through useAgentChat's `tools` option: in agents 0.32 the
// hook sends a tool's schema to the server (as `clientTools` in the request body) only when the
// entry has an `execute`. The hook itself does not call `execute` unless the deprecated
// `experimental_automaticToolResolution` is on, so the page runs them from `onToolCall`
// (see runClientTool) and answers with `addToolOutput`.

const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false };

export const clientTools = {
  getUserTimezone: {
    description: "The user's IANA time zone, as reported by their browser.",
    parameters: NO_PARAMETERS,
    execute: async () => ({ timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone }),
  },
  getScreenSize: {
    description: "The size of the user's screen in CSS pixels.",
    parameters: NO_PARAMETERS,
    execute: async () => ({ width: window.screen.width, height: window.screen.height }),
  },
};

export const isClientTool = (name) => Object.hasOwn(clientTools, name);

/**
 * `onToolCall` handler for useAgentChat: runs a browser tool and reports its output (or its
 * failure as an `output-error`). Calls for other tools (server tools) are left alone.
 */
export async function runClientTool({ toolCall, addToolOutput }) {
  const { toolCallId, toolName, input } = toolCall;
  if (!isClientTool(toolName)) return;
  try {
    const output = await clientTools[toolName].execute(input ?? {});
    addToolOutput({ toolCallId, output });
  } catch (err) {
    addToolOutput({
      toolCallId,
      state: 'output-error',
      errorText: err instanceof Error ? err.message : String(err),
    });
  }
}
