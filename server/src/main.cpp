// polytope-server: the authoritative physics server (server_main.cpp), with the room logics it ships.
#include "polytope/server/server_main.h"

int main(int argc, char** argv)
{
    return polytope::server::serverMain(argc, argv);
}
