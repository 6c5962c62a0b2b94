import { agentName, token, user } from './config.js';
import { ChatDirectory } from './components/ChatDirectory.jsx';
import { ChatSession } from './components/ChatSession.jsx';

const query = token ? { token } : undefined;

/** `?user=`: that user's chats beside the chosen one; otherwise the one chat `?name=` picks. */
export function App() {
  return user ? <ChatDirectory user={user} query={query} /> : <ChatSession name={agentName} query={query} />;
}
