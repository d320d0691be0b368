// soccer-server: polytope-server with the soccer example's room logic registered, so that a scene file may
// name it ("logic": {"name": "soccer"}). Every option is polytope-server's (docs/OPERATIONS.md):
//   soccer-server --insecure --scene examples/soccer/soccer.json
#include "polytope/server/server_main.h"
#include "soccer_logic.h"

int main(int argc, char** argv)
{
    polytope::soccer::registerSoccerLogic();
    return polytope::server::serverMain(argc, argv);
}
